import Agent
import FlyingFox
import Foundation
import SyncCore
import SystemPackage

/// `syncagent web`: the page and its JSON API on 127.0.0.1, for the agents of these configs. It
/// talks to each agent as the CLI does (its socket, its store, `OneShot`): the agent serves no
/// HTTP and holds nothing for the page. Every blocking call runs on a thread of its own.
public final class WebServer: Sendable {
    public let configs: [Config]
    public let guardian: WebGuard
    let server: HTTPServer

    /// Listens on 127.0.0.1 only: no other address of the machine answers.
    public init(configs: [Config], port: Int, token: String) throws {
        self.configs = configs
        guardian = WebGuard(token: token, port: port)
        server = HTTPServer(address: try sockaddr_in.inet(ip4: "127.0.0.1", port: UInt16(port)), timeout: 60, logger: .disabled)
    }

    public func run() async throws {
        await server.appendRoute("GET /", handler: { [self] in try await page($0) })
        await server.appendRoute("GET /api/state", handler: { [self] in try await api($0) { _ in try await self.state() } })
        await server.appendRoute("GET /api/conflict", handler: { [self] in
            try await api($0) { r in let (c, id) = try self.agent(r, "id"); return try await blocking { try WebData.conflict(c, id: id) } }
        })
        await server.appendRoute("GET /api/version", handler: { [self] in try await versionBytes($0) })
        await server.appendRoute("GET /api/history", handler: { [self] in
            try await api($0) { r in let (c, path) = try self.agent(r, "path"); return try await blocking { try WebData.history(c, path: path) } }
        })
        await server.appendRoute("POST /api/resolve", handler: { [self] in try await api($0) { r in try await self.resolve(r) } })
        await server.appendRoute("POST /api/send", handler: { [self] in try await api($0) { r in try await self.send(r) } })
        await server.appendRoute("POST /api/restore", handler: { [self] in try await api($0) { r in try await self.restore(r) } })
        await server.appendRoute("GET /live", handler: { [self] request in
            if let refusal = check(request, upgrade: true) { return refusal }
            return try await WebSocketHTTPHandler(handler: MessageFrameWSHandler(handler: LiveEvents(configs: configs)))
                .handleRequest(request)
        })
        try await server.run()
    }

    public func waitUntilListening() async throws { try await server.waitUntilListening() }

    // MARK: guard

    /// The refusal (or the cookie's redirect) for a request the guard does not let through.
    func check(_ request: HTTPRequest, upgrade: Bool = false) -> HTTPResponse? {
        let verdict = guardian.check(method: request.method.rawValue, host: request.headers[.host],
                                     origin: request.headers[HTTPHeader("Origin")], cookie: request.headers[.cookie],
                                     queryToken: request.query["token"], upgrade: upgrade)
        switch verdict {
        case .allow: return nil
        case .setCookie:
            return HTTPResponse(statusCode: .seeOther, headers: [.location: request.path, .setCookie: guardian.setCookieHeader])
        case .refuse(let status, let reason):
            return HTTPResponse(statusCode: HTTPStatusCode(status, phrase: status == 401 ? "Unauthorized" : "Forbidden"),
                                headers: [.contentType: "text/plain; charset=utf-8"], body: Data("syncagent web: \(reason)\n".utf8))
        }
    }

    private func page(_ request: HTTPRequest) async throws -> HTTPResponse {
        if let refusal = check(request) { return refusal }
        return HTTPResponse(statusCode: .ok, headers: [
            .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
            HTTPHeader("Content-Security-Policy"): "default-src 'self'; img-src 'self' blob:; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'; connect-src 'self'",
            HTTPHeader("X-Frame-Options"): "DENY",
        ], body: Data(WebPage.html.utf8))
    }

    private func api(_ request: HTTPRequest, _ body: @Sendable (HTTPRequest) async throws -> some Encodable & Sendable) async throws -> HTTPResponse {
        if let refusal = check(request) { return refusal }
        do {
            let value = try await body(request)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return HTTPResponse(statusCode: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                                body: try encoder.encode(value))
        } catch let error as WebError {
            return Self.error(error.status, error.description)
        } catch {
            return Self.error(500, "\(error)")
        }
    }

    static func error(_ status: Int, _ message: String) -> HTTPResponse {
        let body = (try? JSONEncoder().encode(["error": message])) ?? Data()
        return HTTPResponse(statusCode: HTTPStatusCode(status, phrase: "Error"), headers: [.contentType: "application/json"], body: body)
    }

    // MARK: reads

    func state() async throws -> [AgentView] {
        let configs = self.configs
        return await blocking { configs.enumerated().map { WebData.view($0.element, index: $0.offset) } }
    }

    /// The agent a request names (`agent=N`) and the value of `key`.
    func agent(_ request: HTTPRequest, _ key: String) throws -> (Config, String) {
        guard let text = request.query["agent"], let i = Int(text), configs.indices.contains(i) else {
            throw WebError(400, "no agent \(request.query["agent"] ?? "(none)") here; agents are 0 to \(configs.count - 1)")
        }
        guard let value = request.query[key], !value.isEmpty else { throw WebError(400, "'\(key)' is missing") }
        return (configs[i], value)
    }

    private func versionBytes(_ request: HTTPRequest) async throws -> HTTPResponse {
        if let refusal = check(request) { return refusal }
        do {
            let (config, id) = try agent(request, "id")
            let version = request.query["version"] ?? "base"
            let bytes = try await blocking { try WebData.versionBytes(config, id: id, version: version) }
            // Pictures only: anything else would be a download of arbitrary bytes into the page.
            guard let type = WebData.imageType(bytes) else { return Self.error(415, "version \(version) of \(id) is no picture") }
            return HTTPResponse(statusCode: .ok, headers: [.contentType: type, .cacheControl: "no-store",
                                                           HTTPHeader("X-Content-Type-Options"): "nosniff"], body: Data(bytes))
        } catch let error as WebError {
            return Self.error(error.status, error.description)
        }
    }

    // MARK: changes (the same paths as the CLI's)

    struct Body: Decodable {
        var agent: Int
        var id: String?
        var keep: String?
        var content: String?
        var path: String?
        var all: Bool?
        var at: String?
        var deletes: Bool?
    }

    func body(_ request: HTTPRequest) async throws -> (Config, Body) {
        let data = try await request.bodyData
        guard let body = try? JSONDecoder().decode(Body.self, from: data) else { throw WebError(400, "the request's body is not the JSON this page sends") }
        guard configs.indices.contains(body.agent) else { throw WebError(400, "no agent \(body.agent) here") }
        return (configs[body.agent], body)
    }

    func resolve(_ request: HTTPRequest) async throws -> [ResolveResult] {
        let (config, body) = try await self.body(request)
        guard let id = body.id else { throw WebError(400, "which conflict? ('id' is missing)") }
        var choice = ResolveChoiceArgument(keep: body.keep, withFile: nil, delete: false)
        if let content = body.content {
            choice = ResolveChoiceArgument(keep: nil, withFile: "(the merge edited on the web page)", delete: false)
            choice.withContent = Array(content.utf8)
        } else if body.keep == nil {
            throw WebError(400, "keep which version? ('keep' or 'content' is missing)")
        }
        return try await OneShot.resolve(config: config, targets: [RecordTarget(text: id)], all: false, choice: choice)
    }

    func send(_ request: HTTPRequest) async throws -> MessageResult {
        let (config, body) = try await self.body(request)
        if body.deletes == true { return try await OneShot.sendDeletes(config: config) }
        return try await OneShot.send(config: config, paths: body.path.map { [Array($0.utf8)] } ?? [], all: body.all ?? (body.path == nil))
    }

    func restore(_ request: HTTPRequest) async throws -> MessageResult {
        let (config, body) = try await self.body(request)
        guard let path = body.path else { throw WebError(400, "restore which path? ('path' is missing)") }
        return try await OneShot.restore(config: config, path: Array(path.utf8), at: body.at)
    }
}

/// Runs blocking work on a thread of its own.
func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await onOwnThread("syncagent-web") { Result { try body() } }.get()
}

func blocking<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await onOwnThread("syncagent-web") { body() }
}

/// The live socket: every event of every agent as `{"agent": N, "event": <its JSON line>}`, the
/// live-only `progress` events among them, through agent restarts (`OneShot.follow`).
struct LiveEvents: WSMessageHandler {
    let configs: [Config]

    func makeMessages(for client: AsyncStream<WSMessage>) async throws -> AsyncStream<WSMessage> {
        let (out, continuation) = AsyncStream.makeStream(of: WSMessage.self, bufferingPolicy: .bufferingNewest(500))
        let followers = configs.enumerated().map { index, config in
            Task {
                for await event in OneShot.follow(config: config) {
                    continuation.yield(.text("{\"agent\":\(index),\"event\":" + String(decoding: event.jsonLine, as: UTF8.self) + "}"))
                }
            }
        }
        let watcher = Task {
            for await message in client { if case .close = message { break } }
            for f in followers { f.cancel() }
            continuation.finish()
        }
        continuation.onTermination = { _ in
            watcher.cancel()
            for f in followers { f.cancel() }
        }
        return out
    }
}
