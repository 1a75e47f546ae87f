/// A JSON value read from text (RFC 8259), for `strata import`: numbers are kept as their
/// text (so a 64-bit integer or a double reads back exactly), object members in their order,
/// each with the exact text it was read from (a codable attribute's JSON is stored as written).
indirect enum JSONValue: Equatable {
    case null
    case bool(Bool)
    /// A number's text as written (`-12`, `4.5e-3`).
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([JSONMember])

    /// The value of member `key` of an object (nil: not an object, or no such member).
    subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// What kind of value this is, for messages.
    var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// A member of a JSON object: its key, its value, and the bytes of the value as written.
struct JSONMember: Equatable {
    var key: String
    var value: JSONValue
    var text: ArraySlice<UInt8>
}

/// Reads one JSON value from UTF-8 bytes. Strict: no trailing commas, no comments, no
/// leading zeros, strings valid UTF-8 with valid escapes, at most 256 levels of nesting.
struct JSONReader {
    /// Why bytes are not JSON, and the byte offset (from the start of what was read) at fault.
    struct SyntaxError: Error, Equatable, CustomStringConvertible {
        var offset: Int
        var reason: String
        var description: String { "\(reason) at byte \(offset + 1)" }
    }

    private let bytes: ArraySlice<UInt8>
    private var index: Int
    private var depth = 0
    static let maximumDepth = 256

    private init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        index = bytes.startIndex
    }

    /// The one value `bytes` holds (whitespace around it allowed).
    /// - Throws: `SyntaxError` when the bytes are not exactly one JSON value.
    static func parse(_ bytes: ArraySlice<UInt8>) throws(SyntaxError) -> JSONValue {
        var reader = JSONReader(bytes)
        reader.skipWhitespace()
        let value = try reader.value()
        reader.skipWhitespace()
        guard reader.index == bytes.endIndex else { throw reader.error("unexpected text after the value") }
        return value
    }

    /// Whether `bytes` are exactly one JSON value with no whitespace around it.
    static func isExactlyOneValue(_ bytes: ArraySlice<UInt8>) -> Bool {
        guard let first = bytes.first, let last = bytes.last, !isWhitespace(first), !isWhitespace(last) else { return false }
        return (try? parse(bytes)) != nil
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private func error(_ reason: String) -> SyntaxError {
        SyntaxError(offset: index - bytes.startIndex, reason: reason)
    }

    private mutating func skipWhitespace() {
        while index < bytes.endIndex, Self.isWhitespace(bytes[index]) { index += 1 }
    }

    private var current: UInt8? { index < bytes.endIndex ? bytes[index] : nil }

    private mutating func expect(_ literal: String, _ value: JSONValue) throws(SyntaxError) -> JSONValue {
        for byte in literal.utf8 {
            guard current == byte else { throw error("expected \(literal)") }
            index += 1
        }
        return value
    }

    private mutating func value() throws(SyntaxError) -> JSONValue {
        guard let byte = current else { throw error("unexpected end of the text") }
        switch byte {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try expect("true", .bool(true))
        case UInt8(ascii: "f"): return try expect("false", .bool(false))
        case UInt8(ascii: "n"): return try expect("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw error("unexpected character")
        }
    }

    private mutating func nest() throws(SyntaxError) {
        depth += 1
        if depth > Self.maximumDepth { throw error("nested more than \(Self.maximumDepth) levels deep") }
    }

    private mutating func object() throws(SyntaxError) -> JSONValue {
        try nest()
        defer { depth -= 1 }
        index += 1
        var members: [JSONMember] = []
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw error("expected a member name in quotes") }
            let key = try string()
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw error("expected : after a member name") }
            index += 1
            skipWhitespace()
            let start = index
            let value = try value()
            members.append(JSONMember(key: key, value: value, text: bytes[start..<index]))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return .object(members)
            default: throw error("expected , or } in an object")
            }
        }
    }

    private mutating func array() throws(SyntaxError) -> JSONValue {
        try nest()
        defer { depth -= 1 }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try value())
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return .array(elements)
            default: throw error("expected , or ] in an array")
            }
        }
    }

    private mutating func number() throws(SyntaxError) -> JSONValue {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        func digits(_ reader: inout JSONReader) -> Int {
            var count = 0
            while let byte = reader.current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                reader.index += 1
                count += 1
            }
            return count
        }
        let integerStart = index
        let integerDigits = digits(&self)
        guard integerDigits > 0 else { throw error("expected a digit") }
        if integerDigits > 1, bytes[integerStart] == UInt8(ascii: "0") { throw SyntaxError(offset: integerStart - bytes.startIndex, reason: "a number with a leading zero") }
        if current == UInt8(ascii: ".") {
            index += 1
            guard digits(&self) > 0 else { throw error("expected a digit after the decimal point") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard digits(&self) > 0 else { throw error("expected a digit in the exponent") }
        }
        return .number(String(decoding: bytes[start..<index], as: UTF8.self))
    }

    private mutating func string() throws(SyntaxError) -> String {
        index += 1
        var scalars = String.UnicodeScalarView()
        var runStart = index
        func flushRun(_ reader: JSONReader, upTo end: Int, into scalars: inout String.UnicodeScalarView) throws(SyntaxError) {
            guard runStart < end else { return }
            guard let text = String(validating: reader.bytes[runStart..<end], as: UTF8.self) else {
                throw SyntaxError(offset: runStart - reader.bytes.startIndex, reason: "a string that is not valid UTF-8")
            }
            scalars.append(contentsOf: text.unicodeScalars)
        }
        while true {
            guard let byte = current else { throw error("a string without its closing quote") }
            if byte == UInt8(ascii: "\"") {
                try flushRun(self, upTo: index, into: &scalars)
                index += 1
                return String(scalars)
            }
            if byte < 0x20 { throw error("a control character in a string (escape it)") }
            guard byte == UInt8(ascii: "\\") else {
                index += 1
                continue
            }
            try flushRun(self, upTo: index, into: &scalars)
            index += 1
            guard let escape = current else { throw error("a string without its closing quote") }
            index += 1
            switch escape {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{08}")
            case UInt8(ascii: "f"): scalars.append("\u{0C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                var code = try hexQuad()
                if (0xD800..<0xDC00).contains(code) {
                    guard current == UInt8(ascii: "\\"), index + 1 < bytes.endIndex, bytes[index + 1] == UInt8(ascii: "u") else {
                        throw error("a lone high surrogate in a \\u escape")
                    }
                    index += 2
                    let low = try hexQuad()
                    guard (0xDC00..<0xE000).contains(low) else { throw error("a high surrogate not followed by a low one") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let scalar = Unicode.Scalar(code) else { throw error("a lone low surrogate in a \\u escape") }
                scalars.append(scalar)
            default: throw error("an unknown escape \\\(Unicode.Scalar(escape))")
            }
            runStart = index
        }
    }

    private mutating func hexQuad() throws(SyntaxError) -> UInt32 {
        var code: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = current, let digit = Self.hexDigit(byte) else { throw error("expected four hex digits after \\u") }
            code = code << 4 | digit
            index += 1
        }
        return code
    }

    private static func hexDigit(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }
}
