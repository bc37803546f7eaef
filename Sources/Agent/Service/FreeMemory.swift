/// The C heap's behaviour, for a small device (glibc).
enum FreeMemory {
    /// Gives the pages of freed heap memory back to the system (`malloc_trim(0)`). After a rare
    /// large job (a start-up commit, rolling packs up, a big merge) the heap would otherwise keep
    /// its high-water mark as resident memory for as long as the agent runs.
    static func returnToSystem() { _ = glibcMallocTrim(0) }

    /// At most two malloc arenas (glibc's default is eight per core): the agent's threads (engine,
    /// fetch, hashing workers, hooks) otherwise each keep an arena of their own, and freed memory
    /// stays spread over all of them. (One arena lowered a 100k-file first sync's peak by 3 MB
    /// but cost a 10k-file sync 0.25 s: the apply's writers wait for each other's mallocs.)
    /// Call it before the first thread starts.
    static func fewArenas() { _ = glibcMallopt(-8 /* M_ARENA_MAX */, 2) }
}

/// glibc declares these in <malloc.h>, which Swift's Glibc module does not import.
@_silgen_name("malloc_trim")
private func glibcMallocTrim(_ pad: Int) -> Int32

@_silgen_name("mallopt")
private func glibcMallopt(_ param: Int32, _ value: Int32) -> Int32
