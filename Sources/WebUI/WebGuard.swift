import Platform

/// Who may use the page (issue 47), decided from a request's words alone, so it is tested as a
/// table: the server binds loopback only, and on top of that
/// - `Host` must name this server on a loopback name (`127.0.0.1`, `localhost`, `[::1]` and the
///   port): a DNS-rebinding page's requests carry its own host name and are refused;
/// - `Origin`, when a browser sends one, must be this server's; requests that change something
///   (POST) and the live socket must carry it: a cross-site form or script is refused;
/// - the token (`syncagent web --url` prints it) is asked once, in the URL; the answer sets an
///   HttpOnly SameSite=Strict cookie and sends the browser to the same page without it.
public struct WebGuard: Sendable {
    public enum Verdict: Equatable, Sendable {
        case allow
        /// The token was right: set the cookie, redirect to the path without the token.
        case setCookie
        case refuse(status: Int, reason: String)
    }

    public let token: String
    /// The cookie's value: random for each run of the server, never the token itself (a cookie
    /// is sent to every port of 127.0.0.1; what leaks that way ends with this run).
    public let session: String
    public let port: Int
    /// Host names the user allowed besides loopback (`[web] hosts` in the config).
    public let extraHosts: [String]

    public static let cookieName = "syncagent_web"

    public init(token: String, port: Int, extraHosts: [String] = [], session: String? = nil) {
        (self.token, self.port, self.extraHosts) = (token, port, extraHosts)
        var generator = SystemRandomNumberGenerator()
        self.session = session ?? (0..<32).map { _ in String(UInt8.random(in: 0...255, using: &generator), radix: 16) }.joined()
    }

    var hosts: [String] { (["127.0.0.1", "localhost", "[::1]"] + extraHosts).map { "\($0):\(port)" } }

    public func check(method: String, host: String?, origin: String?, cookie: String?, queryToken: String?,
                      upgrade: Bool = false) -> Verdict {
        guard let host, hosts.contains(host.lowercased()) else {
            return .refuse(status: 403, reason: "this page answers only as http://127.0.0.1:\(port)/ (Host '\(host ?? "")' refused: it guards against DNS rebinding)")
        }
        let changes = method != "GET" && method != "HEAD"
        if let origin {
            guard hosts.contains(where: { "http://\($0)" == origin.lowercased() }) else {
                return .refuse(status: 403, reason: "a request from another site (Origin '\(origin)') is refused")
            }
        } else if changes || upgrade {
            return .refuse(status: 403, reason: "a request that changes something must come from this page (no Origin header)")
        }
        if let cookie, Self.same(Self.cookieValue(cookie) ?? "", session) { return .allow }
        if let queryToken, Self.same(queryToken, token), !changes { return .setCookie }
        return .refuse(status: 401, reason: "open the address `syncagent web --url` prints (it carries the token)")
    }

    /// The value of our cookie in a `Cookie` header.
    static func cookieValue(_ header: String) -> String? {
        for part in header.split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmed() }
            if pair.count == 2, pair[0] == cookieName { return pair[1] }
        }
        return nil
    }

    /// The `Set-Cookie` value after the token was shown.
    public var setCookieHeader: String { "\(Self.cookieName)=\(session); Path=/; HttpOnly; SameSite=Strict" }

    /// Compares in time that does not depend on where the first difference is.
    static func same(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        guard x.count == y.count else { return false }
        var diff: UInt8 = 0
        for i in x.indices { diff |= x[i] ^ y[i] }
        return diff == 0
    }
}
