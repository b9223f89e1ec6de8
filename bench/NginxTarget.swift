import BearerCore
import BearerIO
import BearerTestSupport
import Foundation
import Glibc

/// nginx as a reverse proxy injecting a static bearer token, for a side-by-side steady comparison.
final class NginxTarget {
    private(set) var process: ChildProcess?
    let directory: String
    let port: Int

    var url: String { "http://127.0.0.1:\(self.port)/bench" }

    static func start(upstreamPort: Int, token: String, log: (String) -> Void) throws -> NginxTarget {
        let nginx = try executable(
            ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"],
            missing: "--with-nginx: nginx is not installed (apt-get install nginx)"
        )
        let target = try NginxTarget(binary: nginx, upstreamPort: upstreamPort, token: token)
        log("nginx: proxy_pass to the mock upstream with a static token on port \(target.port)")
        return target
    }

    private init(binary: String, upstreamPort: Int, token: String) throws {
        (self.directory, self.port) = try comparisonWorkspace("nginx")
        let config = """
            worker_processes 1;
            worker_rlimit_nofile 65536;
            daemon off;
            pid \(self.directory)/nginx.pid;
            error_log \(self.directory)/error.log warn;
            events { worker_connections 16384; multi_accept on; }
            http {
                access_log off;
                keepalive_timeout 75s;
                keepalive_requests 1000000;
                client_body_temp_path \(self.directory)/body;
                proxy_temp_path \(self.directory)/proxy;
                fastcgi_temp_path \(self.directory)/fastcgi;
                uwsgi_temp_path \(self.directory)/uwsgi;
                scgi_temp_path \(self.directory)/scgi;
                upstream bench_upstream { server 127.0.0.1:\(upstreamPort); keepalive 1024; keepalive_requests 1000000; }
                server {
                    listen 127.0.0.1:\(self.port) backlog=4096;
                    location / {
                        proxy_pass http://bench_upstream;
                        proxy_http_version 1.1;
                        proxy_set_header Connection "";
                        proxy_set_header Authorization "Bearer \(token)";
                    }
                }
            }
            """
        try config.write(toFile: self.directory + "/nginx.conf", atomically: true, encoding: .utf8)
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(null) }
        self.process = try BenchChildren.start(
            [binary, "-p", self.directory, "-c", self.directory + "/nginx.conf", "-e", self.directory + "/error.log"],
            stdout: 1,
            stderr: null
        )
        let deadline = Instant.now() + .seconds(10)
        while Instant.now() < deadline {
            if (try? BlockingProbe.connect(port: self.port)) == true { return }
            usleep(20_000)
        }
        // Its folder goes when the bench ends: the log's last line is quoted rather than pointed at.
        let log = (try? String(contentsOfFile: self.directory + "/error.log", encoding: .utf8)) ?? ""
        throw BenchError("nginx did not start: \(log.split(separator: "\n").last ?? "no output in its error.log")")
    }

    func stop() {
        guard let process = self.process else { return }
        if process.isRunning {
            process.signal(SIGQUIT)
            // nginx's worker is the master's child; SIGQUIT ends both.
            if process.wait(timeout: .seconds(10)) == nil { process.signal(SIGKILL) }
        }
        BenchChildren.ended(process)
    }
}

enum BlockingProbe {
    static func connect(port: Int) throws -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return result == 0
    }
}

/// A folder of its own and a free port, for a program the bench compares the proxy with.
func comparisonWorkspace(_ name: String) throws -> (directory: String, port: Int) {
    (try ScratchSpace.newDirectory(name), try freePort())
}

/// The first of `candidates` that is an executable file; else the error `missing`.
func executable(_ candidates: [String], missing: String) throws -> String {
    guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
        throw BenchError(missing)
    }
    return found
}

func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    var bound = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &bound) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: bound.sin_port))
}
