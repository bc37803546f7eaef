@testable import Agent
import Foundation
import Testing

/// `status` problems are typed (code, message, subject); the JSON keeps `problems` as the messages
/// (SPEC) and carries them whole in `problemDetails`; an older agent's answer (messages only) reads.
@Suite struct StatusProblemTests {
    static func report(_ problems: [StatusProblem]) -> StatusReport {
        StatusReport(device: "phone", running: true, pid: 1, data: "/d", store: "/s", head: nil, pending: 0,
                     peers: [], conflicts: .init(open: 0), problems: problems)
    }

    @Test func messagesStayWhereScriptsReadThemAndDetailsGoBeside() throws {
        let problems = [StatusProblem(.apply, "cannot write a/b: a FIFO is in the way", subject: "a/b"),
                        StatusProblem(.hold, "deletions held")]
        let json = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(Self.report(problems))) as? [String: Any]
        #expect(json?["problems"] as? [String] == problems.map(\.message))
        let details = json?["problemDetails"] as? [[String: Any]]
        #expect(details?.first?["code"] as? String == "apply")
        #expect(details?.first?["subject"] as? String == "a/b")
        let back = try JSONDecoder().decode(StatusReport.self, from: try JSONEncoder().encode(Self.report(problems)))
        #expect(back.problems == problems)
    }

    @Test func anOlderAgentsMessagesReadAsOther() throws {
        let old = #"{"device":"phone","running":true,"pid":1,"data":"/d","store":"/s","head":null,"pending":0,"held":0,"peers":[],"conflicts":{"open":0},"problems":["disk full"]}"#
        let report = try JSONDecoder().decode(StatusReport.self, from: Data(old.utf8))
        #expect(report.problems == [StatusProblem(.other, "disk full")])
    }
}
