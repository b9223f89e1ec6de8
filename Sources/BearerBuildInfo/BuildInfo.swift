/// What the binary knows about the build that made it. The `BuildCommit` plugin adds `commit`: the
/// short hash of the commit the sources came from, or `unknown` (a tree that is no git clone).
package enum BuildInfo {}
