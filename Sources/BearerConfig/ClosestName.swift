/// The name among `candidates` that `name` was most likely meant to be: the one the fewest edits
/// away, when that is a slip (at most 3 edits, and at most a third of `name`'s length, at least one)
/// rather than another word. For `did you mean '…'?` after an unknown config key or command-line flag:
/// `upstrem` → `upstream`, `chek` → `check`, but `debug` → nothing (not `demo`).
package func closestName(to name: String, among candidates: [String]) -> String? {
    let scored = candidates.map { ($0, editDistance($0, name)) }.min { $0.1 < $1.1 }
    guard let (best, distance) = scored, distance <= min(3, max(1, name.count / 3)) else { return nil }
    return best
}

/// How many characters must be inserted, deleted or replaced, or pairs of neighbours swapped, to turn
/// one string into the other (the optimal string alignment distance): a swap (`hlep`, `scpoe`) is
/// the commonest slip, one edit rather than two.
func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a)
    let b = Array(b)
    guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) }
    var beforePrevious = Array(repeating: 0, count: b.count + 1)
    var previous = Array(0...b.count)
    for i in 1...a.count {
        var current = [i] + Array(repeating: 0, count: b.count)
        for j in 1...b.count {
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                current[j] = min(current[j], beforePrevious[j - 2] + 1)
            }
        }
        beforePrevious = previous
        previous = current
    }
    return previous[b.count]
}
