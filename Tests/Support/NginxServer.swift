import BearerIO
import Foundation

/// nginx (Debian's) as an HTTP/2 (or HTTP/1.1) server in front of a mock API: the upstream most users' h2 APIs sit
/// behind, and a protocol stack nobody here wrote. It passes each request on to `backendPort` over
/// HTTP/1.1 with the client's `Authorization` untouched, and answers with what it saw:
/// `x-front-protocol` (`HTTP/2.0`) and `x-front-connection` (nginx's connection serial number).
/// `/early` is answered at once, before any request body is read.
///
/// One process (`master_process off`), its files in a folder of its own; stopped (SIGKILL) by `stop`
/// or when released.
package final class NginxServer: @unchecked Sendable {
    package struct StartError: Error, CustomStringConvertible {
        package var description: String
    }

    package let port: Int
    private let pid: pid_t

    /// How nginx listens.
    package enum Listener: Sendable {
        /// `listen … ssl http2` with the fixtures' `localhost` certificate (ALPN `h2`, then `http/1.1`).
        case tls
        /// `listen … http2`: HTTP/2 with prior knowledge only.
        case h2c
        /// HTTP/1.1 only.
        case http1
    }

    package init(backendPort: Int, listener: Listener, in folder: String) throws {
        self.port = try freeLoopbackPort()
        let certificates = TLSFixtures.directory.path
        let listen =
            switch listener {
            case .tls:
                """
                listen 127.0.0.1:\(self.port) ssl http2;
                    ssl_certificate \(certificates)/server.pem; ssl_certificate_key \(certificates)/server.key;
                """
            case .h2c: "listen 127.0.0.1:\(self.port) http2;"
            case .http1: "listen 127.0.0.1:\(self.port);"
            }
        let configuration = """
            daemon off; master_process off; pid \(folder)/nginx.pid; error_log \(folder)/error.log warn;
            events { worker_connections 256; }
            http {
              access_log off;
              client_body_temp_path \(folder)/body; proxy_temp_path \(folder)/proxy;
              fastcgi_temp_path \(folder)/fastcgi; uwsgi_temp_path \(folder)/uwsgi; scgi_temp_path \(folder)/scgi;
              upstream api { server 127.0.0.1:\(backendPort); keepalive 16; }
              server {
                \(listen)
                location = /early { return 200 "answered before the body\n"; }
                location / {
                  proxy_pass http://api; proxy_http_version 1.1; proxy_set_header Connection "";
                  proxy_buffering off;
                  add_header x-front-protocol $server_protocol always;
                  add_header x-front-connection $connection always;
                }
              }
            }
            """
        let file = folder + "/nginx.conf"
        try configuration.write(toFile: file, atomically: true, encoding: .utf8)
        let log = open(folder + "/stderr.log", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        defer { Glibc.close(log) }
        self.pid = try spawnProcess(
            [ExternalTool.nginx.program, "-p", folder, "-c", file],
            stdout: log,
            stderr: log
        )
        // nginx writes its pid file once its sockets listen; an nginx that could not start exits.
        var status: Int32 = 0
        var exited = false
        let ready = waitUntil {
            exited = waitpid(self.pid, &status, WNOHANG) == self.pid
            return exited || FileManager.default.fileExists(atPath: folder + "/nginx.pid")
        }
        guard ready, !exited else {
            if !exited { self.stop() }
            let said = (try? String(contentsOfFile: folder + "/error.log", encoding: .utf8)) ?? ""
            throw StartError(description: "nginx did not start: \(said)")
        }
    }

    deinit { self.stop() }

    package func stop() {
        guard Glibc.kill(self.pid, SIGKILL) == 0 else { return }
        var status: Int32 = 0
        _ = waitpid(self.pid, &status, 0)
    }
}
