import Glibc
import Platform

MallocArenas.limit()  // before any thread: see MallocArenas

// Swift's tasks run on QuietExecutors' threads, not libdispatch's pool (which wakes every second for
// ever once started): installed before the first task, and the program is not an `async` main,
// which would make its first task before anything here runs. A detached task: top-level code is
// the main actor's, and the main thread runs only the main actor's jobs (there are none today).
QuietExecutors.install()
Task.detached {
    await SyncAgentCommand.start()
    exit(0)
}
QuietExecutors.runMainThread()
