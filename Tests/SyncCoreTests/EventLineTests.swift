import FoundationEssentials
@testable import SyncCore
import Testing

/// Events are typed values (`AgentEvent.Kind`) that travel as SPEC's flat JSON lines: each kind
/// gives exactly its fields, and a line read back is the same event.
@Suite struct EventLineTests {
    static let time = Date(timeIntervalSince1970: 1_795_836_230.123)
    static let kinds: [(AgentEvent.Kind, String)] = [
        (.committed(commit: "c1", paths: ["a", "b"], count: 2), #""type":"committed","commit":"c1","count":2,"paths":["a","b"]"#),
        (.received(peer: "watch", commit: "c2", paths: ["a"], count: 5), #""type":"received","commit":"c2","peer":"watch","count":5,"paths":["a"]"#),
        (.conflictOpened(id: "c-1", path: "n.txt"), #""type":"conflict-opened","id":"c-1","path":"n.txt""#),
        (.conflictResolved(id: "c-1", path: "n.txt", strategy: "newest", by: nil), #""type":"conflict-resolved","id":"c-1","path":"n.txt","strategy":"newest""#),
        (.peerReachable(peer: "hub"), #""type":"peer-reachable","peer":"hub""#),
        (.peerUnreachable(peer: "hub", error: "no route"), #""type":"peer-unreachable","peer":"hub","error":"no route""#),
        (.held(path: "big.bin", reason: .maxBytes), #""type":"held","path":"big.bin","reason":"max_bytes""#),
        (.problem(message: "disk full"), #""type":"problem","message":"disk full""#),
        (.started(message: "device phone"), #""type":"started","message":"device phone""#),
        (.stopped, #""type":"stopped""#),
    ]

    @Test func eachKindIsItsFieldsAndComesBackTheSame() throws {
        for (kind, fields) in Self.kinds {
            var event = AgentEvent(kind, time: Self.time)
            event.seq = 7
            let line = String(decoding: event.jsonLine, as: UTF8.self)
            #expect(line == #"{"seq":7,"time":"2026-11-28T03:23:50.123Z","# + fields + "}")
            let back = try JSONDecoder().decode(AgentEvent.self, from: Data(event.jsonLine))
            #expect(back == event)
            #expect(back.type.rawValue == String(fields.dropFirst(8).prefix { $0 != "\"" }))
        }
    }

    @Test func aLineMissingItsTypesFieldsOrOfAnUnknownTypeIsRefused() {
        for bad in [#"{"time":"2026-11-28T03:23:50.123Z","type":"received"}"#,
                    #"{"time":"2026-11-28T03:23:50.123Z","type":"teleported"}"#,
                    #"{"time":"yesterday","type":"stopped"}"#] {
            #expect(throws: DecodingError.self) { try JSONDecoder().decode(AgentEvent.self, from: Data(bad.utf8)) }
        }
    }
}
