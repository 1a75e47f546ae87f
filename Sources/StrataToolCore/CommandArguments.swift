/// One command's arguments: what it accepts, and what was given.
///
/// Syntax: options start with `--` and may come before, between or after the positional
/// arguments; an option's values follow it as separate arguments (`--limit 10`) or, for an
/// option of one value, after `=` (`--limit=10`); `--` ends the options (a path starting with
/// `--` follows it).
struct CommandArguments {
    /// The positional arguments, in order.
    var positionals: [String] = []
    /// The flags given (`--json`).
    var flags: Set<String> = []
    /// Each option given, with its values (the last occurrence wins).
    var options: [String: [String]] = [:]

    /// What a command accepts.
    struct Grammar: Sendable {
        /// The names of the positional arguments, for messages (`PATH`).
        var positionals: [String]
        /// Options without a value.
        var flags: Set<String> = []
        /// Options with values, by name: how many values each takes.
        var options: [String: Int] = [:]
    }

    /// A command line that does not fit the grammar: the message says what is wrong.
    struct UsageError: Error {
        var message: String
    }

    /// Parses `arguments` (after the command's name) by `grammar`.
    /// - Throws: `UsageError` for an unknown option, an option missing values, a flag given a
    ///   value, or too many or too few positional arguments.
    init(_ arguments: [String], grammar: Grammar) throws(UsageError) {
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard !optionsEnded, argument.hasPrefix("--") else {
                positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            var name = String(argument.dropFirst(2))
            var inline: String?
            if let equals = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if grammar.flags.contains(name) {
                guard inline == nil else { throw UsageError(message: "--\(name) takes no value") }
                flags.insert(name)
            } else if let arity = grammar.options[name] {
                var values: [String] = []
                if let inline {
                    guard arity == 1 else { throw UsageError(message: "--\(name) takes \(arity) values, given as separate arguments") }
                    values = [inline]
                } else {
                    guard index + arity <= arguments.count else {
                        throw UsageError(message: "--\(name) needs \(arity == 1 ? "a value" : "\(arity) values")")
                    }
                    values = Array(arguments[index..<(index + arity)])
                    index += arity
                }
                options[name] = values
            } else {
                throw UsageError(message: "unknown option --\(name)")
            }
        }
        if positionals.count < grammar.positionals.count {
            throw UsageError(message: "missing \(grammar.positionals[positionals.count])")
        }
        if positionals.count > grammar.positionals.count {
            throw UsageError(message: "unexpected argument \(positionals[grammar.positionals.count])")
        }
    }

    /// The value of an option of one value, or nil when it was not given.
    func value(_ name: String) -> String? { options[name]?.first }

    /// The value of an option of one value as a count (≥ 0), or nil when it was not given.
    /// - Throws: `UsageError` when it is not a whole number.
    func count(_ name: String) throws(UsageError) -> Int? {
        guard let text = value(name) else { return nil }
        guard let number = Int(text), number >= 0 else { throw UsageError(message: "--\(name) must be a whole number, not \(text)") }
        return number
    }
}
