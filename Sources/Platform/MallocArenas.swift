import Glibc

/// How many malloc arenas the process may have. glibc's default is eight per core: the agent's
/// threads (executors, engine, fetch, hashing workers, hooks) otherwise each keep an arena of
/// their own, and freed memory stays spread over all of them. Two, set before the first thread
/// starts (the first line of `syncagent`'s `main.swift`): set later, from the agent's start-up, the
/// executors' threads had made theirs already, and a 100k-file first sync peaked at 63-64 MB in
/// two runs of three, against 54-55 MB in every run with two. (One arena lowered that peak by
/// another 1-3 MB but cost a 10k-file sync 0.25 s: the apply's writers wait for each other's
/// mallocs.)
public enum MallocArenas {
    public static func limit() { _ = glibcMallopt(-8 /* M_ARENA_MAX */, 2) }
}

/// glibc declares it in <malloc.h>, which Swift's Glibc module does not import.
@_silgen_name("mallopt")
private func glibcMallopt(_ param: Int32, _ value: Int32) -> Int32
