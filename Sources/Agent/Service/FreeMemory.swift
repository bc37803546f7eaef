/// The C heap's behaviour, for a small device (glibc).
enum FreeMemory {
    /// Gives the pages of freed heap memory back to the system (`malloc_trim(0)`). After a rare
    /// large job (a start-up commit, rolling packs up, a big merge) the heap would otherwise keep
    /// its high-water mark as resident memory for as long as the agent runs.
    static func returnToSystem() { _ = glibcMallocTrim(0) }

    /// One malloc arena (glibc's default is eight per core): the agent's threads (engine, fetch,
    /// hashing and writing workers, pack roll-ups, hooks) otherwise each keep an arena of their
    /// own, and memory one of them freed cannot serve another. With two, a first sync of 100k
    /// files peaked at 58-66 MB; with one, 62-63 MB, in the same time. Call it before the first
    /// thread starts.
    static func fewArenas() { _ = glibcMallopt(-8 /* M_ARENA_MAX */, 1) }
}

/// glibc declares these in <malloc.h>, which Swift's Glibc module does not import.
@_silgen_name("malloc_trim")
private func glibcMallocTrim(_ pad: Int) -> Int32

@_silgen_name("mallopt")
private func glibcMallopt(_ param: Int32, _ value: Int32) -> Int32
