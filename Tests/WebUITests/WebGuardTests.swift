import Testing

@testable import WebUI

/// The page's guard as a table (issue 47): loopback Host only, this page's Origin only, the
/// token once then the cookie.
@Suite struct WebGuardTests {
    let guardian = WebGuard(token: String(repeating: "ab", count: 32), port: 8384)
    var cookie: String { "other=1; syncagent_web=\(guardian.session)" }

    @Test(arguments: [
        // method, host, origin, cookie?, token?, upgrade, expected status (0 allow, 1 set-cookie)
        ("GET", "127.0.0.1:8384", nil, true, nil, false, 0),
        ("GET", "localhost:8384", nil, true, nil, false, 0),
        ("GET", "[::1]:8384", nil, true, nil, false, 0),
        ("GET", "127.0.0.1:8384", nil, false, "good", false, 1),
        ("GET", "127.0.0.1:8384", nil, false, "bad", false, 401),
        ("GET", "127.0.0.1:8384", nil, false, nil, false, 401),
        ("GET", "evil.example:8384", nil, true, nil, false, 403),        // DNS rebinding: a foreign Host
        ("GET", "127.0.0.1:9999", nil, true, nil, false, 403),
        ("GET", "192.168.1.5:8384", nil, true, "good", false, 403),      // another address of the machine
        ("GET", nil, nil, true, nil, false, 403),
        ("POST", "127.0.0.1:8384", "http://127.0.0.1:8384", true, nil, false, 0),
        ("POST", "127.0.0.1:8384", "http://evil.example", true, nil, false, 403),  // a cross-site form
        ("POST", "127.0.0.1:8384", nil, true, nil, false, 403),         // a change without Origin
        ("POST", "127.0.0.1:8384", "http://127.0.0.1:8384", false, "good", false, 401),  // no token in a POST
        ("GET", "127.0.0.1:8384", "http://evil.example", true, nil, true, 403),   // a foreign page's socket
        ("GET", "127.0.0.1:8384", nil, true, nil, true, 403),
        ("GET", "127.0.0.1:8384", "http://localhost:8384", true, nil, true, 0),
    ] as [(String, String?, String?, Bool, String?, Bool, Int)])
    func requests(method: String, host: String?, origin: String?, withCookie: Bool, token: String?, upgrade: Bool, expected: Int) {
        let verdict = guardian.check(method: method, host: host, origin: origin, cookie: withCookie ? cookie : nil,
                                     queryToken: token == "good" ? guardian.token : token, upgrade: upgrade)
        switch verdict {
        case .allow: #expect(expected == 0)
        case .setCookie: #expect(expected == 1)
        case .refuse(let status, let reason):
            #expect(status == expected, "\(reason)")
            #expect(!reason.isEmpty)
        }
    }

    @Test func theCookieIsHttpOnlyAndSameSiteStrict() {
        #expect(guardian.setCookieHeader.contains("HttpOnly"))
        #expect(guardian.setCookieHeader.contains("SameSite=Strict"))
        #expect(guardian.setCookieHeader.hasPrefix("syncagent_web=\(guardian.session);"))
        #expect(!guardian.setCookieHeader.contains(guardian.token))  // the token itself never travels in a cookie
        let withToken = guardian.check(method: "GET", host: "127.0.0.1:8384", origin: nil, cookie: "syncagent_web=\(guardian.token)",
                                       queryToken: nil)
        #expect(withToken != .allow)
    }
}
