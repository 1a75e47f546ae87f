#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StrataSchema

/// How `strata dump` (and `strata schema`, for defaults) writes a stored value as JSON
/// (Docs/Tools.md, "The dump format").
enum RecordJSON {
    /// An attribute's value: booleans, integers and doubles as JSON literals (NaN and the
    /// infinities as strings), strings as strings, data as base64, dates as ISO 8601 UTC with
    /// microseconds, UUIDs as their uppercase text, a codable value as its stored JSON, a
    /// missing value as null. A stored value of a relationship kind (references) is an array
    /// of record ids.
    static func value(_ value: Value) -> JSONText {
        switch value {
        case .null: .null
        case .bool(let flag): .bool(flag)
        case .int(let number): .int(number)
        case .double(let number): .double(number)
        case .string(let text): .string(text)
        case .data(let bytes): .string(Data(bytes).base64EncodedString())
        case .date(let date): .string(iso8601(date) ?? value.description)
        case .uuid(let uuid): .string(uuid.uuidString)
        case .codable(let bytes): codable(bytes)
        case .references(let ids): .array(ids.map { .int($0) })
        }
    }

    /// A relationship's value: the id of the record a to-one relationship refers to (null:
    /// none); the ids a to-many one refers to, in order (an empty array: none).
    static func relationship(_ value: Value?, toMany: Bool) -> JSONText {
        switch value {
        case .references(let ids)?: toMany ? .array(ids.map { .int($0) }) : (ids.count == 1 ? .int(ids[0]) : .array(ids.map { .int($0) }))
        case nil, .null?: toMany ? .array([]) : .null
        case let other?: self.value(other)
        }
    }

    /// A codable attribute's stored JSON, as it is when it parses as JSON (line breaks, which
    /// JSON allows only between tokens, become spaces so a dump stays one record a line);
    /// otherwise `{"invalidJSON": "<base64 of the bytes>"}`.
    static func codable(_ bytes: [UInt8]) -> JSONText {
        if let text = String(validating: bytes, as: UTF8.self),
           (try? JSONDecoder().decode(AnyJSON.self, from: Data(bytes))) != nil {
            return .raw(String(text.map { $0 == "\n" || $0 == "\r" || $0 == "\r\n" ? " " : $0 }))
        }
        return .object([("invalidJSON", .string(Data(bytes).base64EncodedString()))])
    }

    /// `2026-03-01T12:30:45.123456Z`: UTC, microseconds (rounded down); nil for a date outside
    /// the years 1 to 9999 or not finite.
    static func iso8601(_ date: Date) -> String? {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, seconds >= -62_135_596_800, seconds < 253_402_300_800 else { return nil }
        let microseconds = Int64((seconds * 1_000_000).rounded(.down))
        let (days, remainder) = microseconds.floorDivided(by: 86_400_000_000)
        // Civil date of a day count from 1970-01-01 (proleptic Gregorian; Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        let time = remainder / 1_000_000, fraction = remainder % 1_000_000
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(time / 3600, 2)):\(pad(time / 60 % 60, 2)):\(pad(time % 60, 2))"
            + ".\(pad(fraction, 6))Z"
    }

    private static func pad(_ number: Int64, _ width: Int) -> String {
        let digits = String(number)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}

extension Int64 {
    /// Quotient rounded toward negative infinity, and the non-negative remainder.
    fileprivate func floorDivided(by divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let quotient = self / divisor, remainder = self % divisor
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }
}

/// Any JSON text: decoding it only checks that bytes are JSON.
private struct AnyJSON: Decodable {
    init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            while !array.isAtEnd { _ = try array.decode(AnyJSON.self) }
        } else if let object = try? decoder.container(keyedBy: AnyKey.self) {
            for key in object.allKeys { _ = try object.decode(AnyJSON.self, forKey: key) }
        } else {
            let single = try decoder.singleValueContainer()
            if single.decodeNil() { return }
            if (try? single.decode(Bool.self)) != nil { return }
            if (try? single.decode(Double.self)) != nil { return }
            _ = try single.decode(String.self)
        }
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
