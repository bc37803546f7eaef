import Glibc

/// How many malloc arenas the process may have: two. glibc's default is eight per core: the
/// agent's threads (executors, engine, fetch, hashing workers, hooks) otherwise each keep an arena
/// of their own, and freed memory stays spread over all of them (an agent with no limit had 10).
/// Set before the first thread starts (the first line of `syncagent`'s `main.swift`). Set from
/// the agent's start-up, after the executors' threads had allocated, the count was the same, but
/// a 100k-file first sync peaked over 60 MB (63-64) in 4 runs of 9, and in 0 of 8 set first
/// (54-55 MB); which threads share which arena depends on the order they first allocate in, and
/// how that made the difference is not known. (One arena lowered that peak by another 1-3 MB
/// but cost a 10k-file sync 0.25 s: the apply's writers wait for each other's mallocs.)
public enum MallocArenas {
    public static func limit() { _ = glibcMallopt(-8 /* M_ARENA_MAX */, 2) }
}

/// glibc declares it in <malloc.h>, which Swift's Glibc module does not import.
@_silgen_name("mallopt")
private func glibcMallopt(_ param: Int32, _ value: Int32) -> Int32
