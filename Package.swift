// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "syncagent",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "syncagent", targets: ["syncagent"]),
        .executable(name: "settings-agent", targets: ["settings-agent"]),
        .library(name: "Agent", targets: ["Agent"]),
        .library(name: "SyncAgentKit", targets: ["SyncAgentKit"]),
        .executable(name: "phone-app", targets: ["phone-app"]),
        .executable(name: "watch-app", targets: ["watch-app"]),
        .executable(name: "syncagent-web", targets: ["syncagent-web"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.0"),
        .package(url: "https://github.com/swhitty/FlyingFox", from: "0.27.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.0"),
    ],
    targets: [
        // C library: the modulemap and shim only.
        .systemLibrary(
            name: "CLibgit2",
            pkgConfig: "libgit2",
            providers: [.apt(["libgit2-dev"])]
        ),
        // zlib, libdeflate and OpenSSL's digests: the modulemap and shim only.
        .systemLibrary(
            name: "CCompression",
            providers: [.apt(["zlib1g-dev", "libdeflate-dev", "libssl-dev"])]
        ),
        // The project's own object storage, in git's formats, with no libgit2: object ids, loose
        // objects read in chunks, packs and their indexes written, SHA-1, CRC-32 and Adler-32,
        // checks of files a power cut damaged. Knows nothing of libgit2 or of syncing.
        .target(
            name: "ObjectStorage",
            dependencies: [
                "CCompression", "FileSystem",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
        ),
        // Every libgit2 call, pointer and error, and the glue that lets libgit2 read and write
        // through ObjectStorage (odb backends, pack batches, copies, transfers). Knows nothing of syncing.
        .target(
            name: "Git",
            dependencies: [
                "CLibgit2", "CCompression", "ObjectStorage", "Platform", "FileSystem",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
        ),
        // lstat and readdir with byte-exact names; atomic file writes. No policy.
        .target(
            name: "FileSystem",
            dependencies: ["CFileSystemType", .product(name: "SystemPackage", package: "swift-system")]
        ),
        // inotify, recursive watches, rescans, debounce. Knows nothing of git.
        // statfs(2)'s file system type: one inline C function.
        .target(name: "CFileSystemType"),
        // What Foundation gave and we no longer link (it costs each agent ~8 MB resident): threads, a
        // condition variable, trimming, the temporary directory, formatting numbers, child processes'
        // output. CPlatform: pthread_setname_np, one inline C function.
        .target(name: "CPlatform"),
        .target(name: "Platform", dependencies: ["CPlatform"]),
        .target(
            name: "Watcher",
            dependencies: [
                "FileSystem", "Platform",
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
        ),
        // An encrypted hub's cryptography (swift-crypto): the key, its text form and passphrase
        // (scrypt), sealing and opening objects and manifests (AES-256-GCM), opaque names (HMAC).
        // Knows nothing of git beyond the bytes of an object.
        .target(
            name: "HubSeal",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
        ),
        // Config, store (commit path, scans), path rules, locks.
        .target(
            name: "SyncCore",
            dependencies: [
                "Git", "ObjectStorage", "FileSystem", "Platform", "HubSeal",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "TOMLKit", package: "TOMLKit"),
            ],
            // TOMLKit imports Foundation; each file sees only the members of what it imports, so
            // no file but the config parser's reaches Foundation (see NO_FOUNDATION in the Makefile).
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
        ),
        // The long-running service: lifecycle, watcher -> store, control socket.
        .target(
            name: "Agent",
            dependencies: [
                "SyncCore", "Watcher", "FileSystem", "Platform",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
        ),
        // The CLI: parses, calls, prints.
        .executableTarget(
            name: "syncagent",
            dependencies: [
                "Agent", "SyncCore", "FileSystem", "Platform", "HubSeal",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
        ),
        // `syncagent web`: the page and its JSON API on 127.0.0.1, a client of the agents like the
        // CLI (socket, store, OneShot). A program of its own: FlyingFox (a small HTTP server on
        // Swift concurrency, with WebSockets) and Foundation stay out of the agent.
        .target(
            name: "WebUI",
            dependencies: [
                "Agent", "SyncCore", "FileSystem", "Platform",
                .product(name: "FlyingFox", package: "FlyingFox"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        .executableTarget(
            name: "syncagent-web",
            dependencies: [
                "WebUI", "Agent", "SyncCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // What an app links: typed values at keys, live updates, typed conflict callbacks, per-key
        // policy and status; embedded (the agent in the app's process) or a client of `syncagent run`.
        .target(
            name: "SyncAgentKit",
            dependencies: [
                "Agent", "SyncCore", "FileSystem",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
        ),
        // Samples: a phone app (embedded) and a watch app (client) built only on SyncAgentKit.
        .target(name: "SampleModels", dependencies: ["SyncAgentKit"], path: "Samples/SampleModels"),
        .executableTarget(
            name: "phone-app",
            dependencies: ["SyncAgentKit", "SampleModels",
                           .product(name: "Logging", package: "swift-log"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")],
            path: "Samples/PhoneApp"
        ),
        .executableTarget(
            name: "watch-app",
            dependencies: ["SyncAgentKit", "SampleModels",
                           .product(name: "Logging", package: "swift-log"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")],
            path: "Samples/WatchApp"
        ),
        // README's "Use it from Swift" code, built so that it cannot go stale.
        .executableTarget(name: "use-from-swift", dependencies: ["SyncAgentKit"], path: "Samples/UseFromSwift"),
        // Samples: a program embedding the agent with its own ConflictResolver.
        .executableTarget(
            name: "settings-agent",
            dependencies: [
                "Agent", "SyncCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Samples/SettingsAgent"
        ),
        // What every test suite shares: real temporary directories and device layouts, `git fsck`.
        .target(name: "TestSupport", dependencies: [.product(name: "SystemPackage", package: "swift-system")],
                path: "Tests/TestSupport"),
        .testTarget(name: "ObjectStorageTests", dependencies: ["ObjectStorage", "CCompression"]),
        .testTarget(name: "GitTests", dependencies: ["Git", "ObjectStorage", "FileSystem", "TestSupport", .product(name: "SystemPackage", package: "swift-system"),
                                                   .product(name: "PropertyBased", package: "swift-property-based")]),
        .testTarget(name: "SyncAgentKitTests", dependencies: ["SyncAgentKit", "Agent", "SyncCore", "TestSupport",
                                                             .product(name: "SystemPackage", package: "swift-system")]),
        .testTarget(name: "AgentTests", dependencies: ["Agent", "SyncCore", "Watcher", "TestSupport", .product(name: "Logging", package: "swift-log"),
                                                      .product(name: "SystemPackage", package: "swift-system")]),
        .testTarget(name: "WebUITests", dependencies: ["WebUI"]),
        .testTarget(name: "HubSealTests", dependencies: ["HubSeal"]),
        .testTarget(name: "WatcherTests", dependencies: ["Watcher", "FileSystem", "TestSupport", .product(name: "SystemPackage", package: "swift-system")]),
        .testTarget(name: "SyncCoreTests", dependencies: ["SyncCore", "Git", "ObjectStorage", "FileSystem", "Platform", "HubSeal", "TestSupport", .product(name: "SystemPackage", package: "swift-system"),
                                                         .product(name: "PropertyBased", package: "swift-property-based")]),
    ]
)
