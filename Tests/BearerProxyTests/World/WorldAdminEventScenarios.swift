import BearerCore
import BearerDemo
import BearerHTTP
import BearerTestSupport
import Foundation
import Testing

@testable import BearerConfig

/// The admin's `/events` stream, read with a plain client: a snapshot a second on the loop's clock,
/// the sessions and counters in it and never a secret, a bounded number of viewers, and a viewer that
/// goes being let go. In memory and live.
@Suite struct WorldAdminEventScenarios {
    /// A world with an admin listener and a second session, `vendor`, with a static token the
    /// upstream does not take.
    static func adminWorld(_ backend: WorldBackend) throws -> TestWorld {
        try TestWorld(backend) { configuration, world in
            configuration.adminListen = .hostPort(host: "127.0.0.1", port: world.port(9090))
            var vendor = SessionSettings(name: "vendor")
            vendor.upstream = try HTTPURL.parse(world.upstreamURL).get()
            vendor.accessToken = Secret("vendor-static-token-5e2a")
            vendor.mount = "/vendor"
            configuration.sessions.append(vendor)
        }
    }

    /// A viewer: `GET /events` on a new admin connection, its head read.
    final class Viewer {
        let client: WorldClient
        let head: ResponseHead
        private var pending = ""
        private(set) var raw = ""

        init(_ world: TestWorld) throws {
            let address = try #require(world.proxy.adminAddress)
            self.client = try world.connect(to: address)
            self.client.send("GET /events HTTP/1.1\r\nHost: 127.0.0.1:\(address.port ?? 0)\r\n\r\n")
            self.head = try self.client.readHead()
        }

        /// The snapshots that came by the time a read finds nothing more (in memory: the world settled).
        func snapshots(atLeast count: Int = 1) -> [[String: Any]] {
            var events: [[String: Any]] = []
            while events.count < count {
                let bytes = self.client.readSome()
                if bytes.isEmpty { break }
                let text = String(decoding: bytes, as: UTF8.self)
                self.raw += text
                self.pending += text
                while let end = self.pending.range(of: "\n\n") {
                    let event = String(self.pending[..<end.lowerBound])
                    self.pending.removeSubrange(..<end.upperBound)
                    guard event.hasPrefix("data: "),
                        let object = try? JSONSerialization.jsonObject(with: Data(event.dropFirst(6).utf8))
                            as? [String: Any]
                    else { continue }
                    events.append(object)
                }
            }
            return events
        }
    }

    static func session(_ snapshot: [String: Any]?, _ name: String) -> [String: Any]? {
        (snapshot?["sessions"] as? [[String: Any]])?.first { $0["name"] as? String == name }
    }

    @Test(arguments: WorldBackend.chosen)
    func aViewerGetsASnapshotASecondOfEverySessionAndNoSecret(backend: WorldBackend) throws {
        let world = try Self.adminWorld(backend)
        world.settle { world.session.state == "ready" }
        #expect(try world.get("/warm").status == 200)
        world.authority.revokeAll()
        #expect(try world.get("/replayed").status == 200)
        // The upstream knows no vendor token: that session is rejected, and its sentence says why.
        #expect(try world.get("/vendor/items").status == 401)

        let viewer = try Viewer(world)
        #expect(viewer.head.status == 200)
        #expect(viewer.head.value(of: "content-type") == "text/event-stream")
        let first = viewer.snapshots()
        if backend == .memory {
            // The loop's clock sets the cadence: one at once, then one per second that passes.
            #expect(first.count == 1)
            world.advance(by: .seconds(1))
            #expect(viewer.snapshots().count == 1)
            world.advance(by: .seconds(3))
            #expect(viewer.snapshots(atLeast: 3).count == 3)
            world.advance(by: .milliseconds(500))
            #expect(viewer.snapshots().isEmpty)
        } else {
            #expect(viewer.snapshots(atLeast: 3 - first.count).count >= 3 - first.count)
        }
        let last = viewer.snapshots(atLeast: 1).last ?? first.last
        let main = try #require(Self.session(last, "default"))
        #expect(main["state"] as? String == "ready")
        #expect(main["token_generation"] as? Int == 2)
        #expect(main["refreshes_last_hour"] as? Int == 2)
        #expect((main["last_refresh"] as? [String: Any])?["outcome"] as? String == "ok")
        #expect(main["store"] as? String == "memory")
        #expect(main["upstream"] as? String == world.upstreamURL)
        #expect((main["token_expires_in_s"] as? Double ?? 0) > 0)
        let vendor = try #require(Self.session(last, "vendor"))
        #expect(vendor["state"] as? String == "rejected")
        #expect((vendor["failure"] as? String)?.contains("nothing can refresh it") == true)
        #expect(last?["requests_total"] as? Int == 3)
        #expect(last?["upstream_401s_total"] as? Int == 2)
        #expect(last?["parked_requests"] as? Int == 0)
        // Each session's chart counts its own: default's two requests (one refused, replayed), and
        // vendor's one, refused.
        #expect(main["requests_total"] as? Int == 2)
        #expect(main["upstream_401s_total"] as? Int == 1)
        #expect(vendor["requests_total"] as? Int == 1)
        #expect(vendor["upstream_401s_total"] as? Int == 1)
        #expect(main["requests_per_second"] is Double && vendor["upstream_401s_per_second"] is Double)

        let issued = (1...max(1, world.authority.issuedCount)).map { "\(world.authority.prefix)\($0)" }
        for secret in issued + [TestWorld.clientSecret, "vendor-static-token-5e2a"] {
            #expect(!viewer.raw.contains(secret), "\(secret) is in the event stream")
        }
    }

    @Test(arguments: WorldBackend.chosen)
    func viewersAreBoundedAndOneThatGoesIsLetGo(backend: WorldBackend) throws {
        let world = try Self.adminWorld(backend)
        world.settle { world.session.state == "ready" }
        let viewers = try (0..<8).map { _ in try Viewer(world) }
        #expect(viewers.map(\.head.status) == Array(repeating: 200, count: 8))
        for viewer in viewers { #expect(viewer.snapshots().count >= 1) }

        let refused = try Viewer(world)
        #expect(refused.head.status == 503)
        let reason = String(decoding: refused.client.readSome(), as: UTF8.self)
        #expect(
            reason
                == "bearer-proxy: 8 viewers are watching /events already, the most it serves; close one and try again\n"
        )

        viewers[0].client.shutdownWrite()
        #expect(viewers[0].client.closedByProxy())
        // Its place is free again: the next viewer is served.
        var next: Viewer?
        world.settle {
            next = try? Viewer(world)
            return next?.head.status == 200
        }
        #expect(next?.head.status == 200)
        #expect(next?.snapshots().count ?? 0 >= 1)
    }
}
