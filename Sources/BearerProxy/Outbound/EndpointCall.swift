import BearerCore
import BearerIO
import Dispatch

/// A request bearer-proxy makes on its own account: to a token, login, device authorization,
/// revocation or logout endpoint. Always a POST with a body; the connection closes after the answer.
struct EndpointRequest: Sendable {
    var url: HTTPURL
    var contentType: String
    var body: [UInt8]
    /// Extra header fields, such as `Authorization: Basic …` for client_secret_basic.
    var fields: [(String, String)] = []

    /// The whole HTTP/1.1 message. Secret values in the body or fields are already revealed: these
    /// bytes go to the endpoint and nowhere else.
    var bytes: [UInt8] {
        var head = "POST \(self.url.pathPrefix.isEmpty ? "/" : self.url.pathPrefix) HTTP/1.1\r\n"
        head += "Host: \(self.url.origin.authority)\r\n"
        head += "Content-Type: \(self.contentType)\r\n"
        head += "Accept: application/json\r\n"
        head += "User-Agent: bearer-proxy/\(CommandLineOptions.version)\r\n"
        for (name, value) in self.fields { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(self.body.count)\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + self.body
    }
}

/// The one way requests to token, login, device, revocation and logout endpoints leave the process.
///
/// Every call the proxy and `bearer-proxy login`/`logout` make on their own account goes through
/// `send`, so how an endpoint is reached (the `OutboundConnector`: resolution, TLS that fails closed
/// for `https://`) is decided in one place.
struct EndpointCaller: Sendable {
    let loop: EventLoop
    let connector: OutboundConnector
    /// The whole exchange, connecting included: `refresh_timeout`.
    let timeout: Duration

    init(configuration: Configuration, loop: EventLoop, connector: OutboundConnector) {
        self.loop = loop
        self.connector = connector
        self.timeout = configuration.refreshTimeout
    }

    /// Sends `request`; `completion` runs once, on the caller's event loop.
    func send(
        _ request: EndpointRequest,
        _ completion: @escaping @Sendable (Result<EndpointResponse, EndpointError>) -> Void
    ) {
        EndpointClient.send(
            request.bytes,
            to: request.url.origin,
            on: self.loop,
            connector: self.connector,
            timeout: self.timeout,
            completion: completion
        )
    }

    /// Sends `request` and waits for the answer. Blocks the calling thread: for the command line
    /// and for Dispatch's pool, never for an event loop.
    func sendAndWait(_ request: EndpointRequest) -> Result<EndpointResponse, EndpointError> {
        precondition(!self.loop.inEventLoop, "sendAndWait would block the event loop it waits for")
        let answer = Locked<Result<EndpointResponse, EndpointError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        self.send(request) { result in
            answer.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return answer.withLock { $0 }!
    }
}
