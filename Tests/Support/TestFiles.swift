import BearerHTTP
import Foundation
import Glibc
import Testing

/// A fresh folder in the scratch space for one test's CA (the CA folder itself is not created).
package func temporaryCADirectory() -> String {
    do {
        return try ScratchSpace.newDirectory("ca") + "/ca"
    } catch {
        Issue.record("\(error)")
        return "/nonexistent/ca"
    }
}

package func patterns(_ text: String) -> [HostPattern] {
    text.split(separator: ",").map { HostPattern.parse(String($0))! }
}

package func permissions(_ path: String) -> mode_t? {
    var info = stat()
    return stat(path, &info) == 0 ? info.st_mode & 0o777 : nil
}

package func fileText(_ path: String) -> String {
    (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
}
