/// The `strata` tool's exit statuses (Docs/Tools.md, "Exit statuses").
package enum ToolExitStatus: Int32, Sendable {
    /// The command did what it was asked; `verify` found the store sound.
    case success = 0
    /// `verify` found problems (each printed); the store could be read.
    case problemsFound = 1
    /// The command line is wrong: an unknown command or option, a missing or extra argument,
    /// a bad value. Nothing was read.
    case usage = 2
    /// The store could not be read or changed: no store at the path, damage that stops
    /// opening it, an unsupported format version, an I/O error, a migration in progress; for
    /// `backup`, something already at its destination or a copy not written or not sound.
    case storeError = 3
    /// A mutating command (`compact`, `checkpoint`) found the store open for writing by
    /// another process (the app): nothing was changed. Try again once the app closed it.
    case locked = 4
}
