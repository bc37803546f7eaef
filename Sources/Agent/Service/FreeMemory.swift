/// The C heap's behaviour, for a small device (glibc).
enum FreeMemory {
    /// Gives the pages of freed heap memory back to the system (`malloc_trim(0)`). After a rare
    /// large job (a start-up commit, rolling packs up, a big merge) the heap would otherwise keep
    /// its high-water mark as resident memory for as long as the agent runs.
    static func returnToSystem() { _ = glibcMallocTrim(0) }
}

/// glibc declares it in <malloc.h>, which Swift's Glibc module does not import.
@_silgen_name("malloc_trim")
private func glibcMallocTrim(_ pad: Int) -> Int32

