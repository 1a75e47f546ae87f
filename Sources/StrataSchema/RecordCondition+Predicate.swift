#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What compiling a predicate needs to know about one attribute of the entity.
package struct ConditionAttribute: Sendable {
    package var id: UInt32
    package var type: AttributeType
    /// The value a record without the attribute decodes to: the catalog default, else the
    /// record type's ``PersistentRecord/attributeDefaults`` entry; `.null` for none.
    package var defaultValue: Value

    package init(id: UInt32, type: AttributeType, defaultValue: Value) {
        self.id = id
        self.type = type
        self.defaultValue = defaultValue
    }
}

extension RecordCondition {
    /// Compiles a `#Predicate` on `Record` into a condition on stored bytes. Parts it does not
    /// understand become `.unknown` (decided by decoding); it never changes what the
    /// predicate selects (see ``RecordCondition``).
    ///
    /// A key path is mapped to an attribute by its name and then *verified*: two records that
    /// differ only in that attribute are decoded and the key path must read each one's value.
    /// A property whose coding key is another property's name, or a computed property, thus
    /// never reads the wrong field; it is left to the predicate.
    ///
    /// - Parameter verdicts: where the key paths' probing is kept from one compile to the next
    ///   (nil: probe every time).
    package static func compile<Record: PersistentRecord>(_ predicate: Predicate<Record>, attributes: [String: ConditionAttribute],
                                                          verdicts: (any KeyPathVerdicts)? = nil) -> RecordCondition
    {
        ConditionCompiler<Record>(attributes: attributes, variable: predicate.variable.key, verdicts: verdicts).condition(predicate.expression)
    }
}

/// One side of a comparison.
enum ConditionOperand {
    /// A stored attribute, read through a property of type `isOptional` or not.
    case field(ConditionAttribute, isOptional: Bool)
    case constant(Value)
}

/// Compiles the expression tree of a predicate on `Record`.
struct ConditionCompiler<Record: PersistentRecord> {
    let attributes: [String: ConditionAttribute]
    let variable: PredicateExpressions.VariableID
    let verdicts: (any KeyPathVerdicts)?

    func condition(_ expression: Any) -> RecordCondition {
        (expression as? any ConditionExpression)?.condition(self) ?? .unknown
    }

    func operand(_ expression: Any) -> ConditionOperand? {
        (expression as? any OperandExpression)?.operand(self)
    }

    /// `lhs op rhs` for a field and a constant in either order.
    func compare(_ lhs: Any, _ comparison: RecordCondition.Comparison, _ rhs: Any) -> RecordCondition {
        switch (operand(lhs), operand(rhs)) {
        case (.field(let attribute, let isOptional)?, .constant(let value)?):
            return .compare(attributeID: attribute.id, comparison, value, absent: absentValue(attribute, isOptional))
        case (.constant(let value)?, .field(let attribute, let isOptional)?):
            return .compare(attributeID: attribute.id, comparison.mirrored, value, absent: absentValue(attribute, isOptional))
        default:
            return .unknown
        }
    }

    /// Whether evaluating `expression` may throw: it holds a force unwrap or a force cast
    /// (`PredicateExpressions.ForcedUnwrap`, `.ForceCast`), which throw on nil or a failed
    /// cast. An expression's type spells its whole tree, so its name tells.
    static func mayThrow(_ expression: Any) -> Bool {
        let name = String(reflecting: type(of: expression))
        return name.contains("ForcedUnwrap<") || name.contains("ForceCast<")
    }

    /// What a record lacking the attribute decodes to, or nil when it does not decode.
    func absentValue(_ attribute: ConditionAttribute, _ isOptional: Bool) -> Value? {
        if !attribute.defaultValue.isNull { return attribute.defaultValue }
        return isOptional ? .null : nil
    }

    /// The attribute a key path on `Record` reads, verified on probe records; nil when the key
    /// path is not a stored attribute of a supported type, or when the record's decoding does
    /// not give back the stored value (a hand-written `init(from:)` that clamps, lowercases or
    /// otherwise changes it: the pre-filter reads stored bytes, so only decoding can answer).
    /// Each probe record differs only in that attribute; its value must read back exactly,
    /// or fail to decode (a value the property cannot hold — an `Int8` given 1000 — is never
    /// stored). The answer is kept in `verdicts`, per record type, key path and attribute.
    func attribute<Output>(for keyPath: KeyPath<Record, Output>) -> ConditionAttribute? {
        let description = "\(keyPath)"
        guard let dot = description.lastIndex(of: ".") else { return nil }
        let name = String(description[description.index(after: dot)...])
        guard let attribute = attributes[name], let probes = Self.probeValues(attribute.type) else { return nil }
        let key = ProbeKey(record: ObjectIdentifier(Record.self), keyPath: description, attributeID: attribute.id, type: attribute.type,
                           attributeCount: attributes.count)
        if let known = verdicts?.verdict(for: key) { return known ? attribute : nil }
        var neutral: [String: Value] = [:]
        for (other, info) in attributes where other != name {
            if let value = Self.neutralValue(info.type) { neutral[other] = value }
        }
        /// Whether a record holding `value` reads it back (nil: it does not decode).
        func reads(_ value: Value) -> Bool? {
            var values = neutral
            values[name] = value
            guard let probe = try? RecordDecoder().decode(Record.self, from: values) else { return nil }
            return ConditionConstant.value(probe[keyPath: keyPath]) == value
        }
        // The first two must decode (every property of the type holds them); the others may
        // fail to, but never read back another value.
        let answers = probes.map(reads)
        let verified = answers.prefix(2).allSatisfy { $0 == true } && !answers.contains(false)
        verdicts?.record(verified, for: key)
        return verified ? attribute : nil
    }

    /// Values of a type the pre-filter compares, for probing: two ordinary distinct ones, then
    /// the kinds a hand-written decoder changes — extremes and negatives (clamping), capitals,
    /// spaces and accents (case folding, trimming, normalizing).
    static func probeValues(_ type: AttributeType) -> [Value]? {
        switch type {
        case .bool: [.bool(false), .bool(true)]
        case .int: [.int(1), .int(2), .int(-3), .int(1_000), .int(-1_000), .int(1 << 40), .int(-(1 << 40)), .int(.max), .int(.min)]
        case .double: [.double(1), .double(2), .double(-3.5), .double(1e6), .double(-1e6), .double(1e300), .double(-1e300)]
        case .string: [.string("a"), .string("b"), .string("B"), .string("Zz"), .string(" x "), .string("é"), .string("e\u{301}")]
        case .date: [.date(Date(timeIntervalSinceReferenceDate: 1)), .date(Date(timeIntervalSinceReferenceDate: 2)),
                     .date(Date(timeIntervalSinceReferenceDate: -1e10)), .date(Date(timeIntervalSinceReferenceDate: 1e10))]
        case .uuid: [.uuid(UUID(uuid: (1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))),
                     .uuid(UUID(uuid: (2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))),
                     .uuid(UUID(uuid: (0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF)))]
        default: nil
        }
    }

    /// A value of `type` unlike the first two probe values (false for Booleans, which have two).
    static func neutralValue(_ type: AttributeType) -> Value? {
        switch type {
        case .bool: .bool(false)
        case .int: .int(0)
        case .double: .double(0)
        case .string: .string("")
        case .date: .date(Date(timeIntervalSinceReferenceDate: 0))
        case .uuid: .uuid(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        case .data: .data([])
        default: nil
        }
    }
}

/// Constants of the types the pre-filter compares.
enum ConditionConstant {
    /// `value` as a `Value`: `.null` for nil, nil for a type the pre-filter does not compare.
    static func value(_ value: Any) -> Value? {
        if let optional = value as? any AnyOptional, optional.isNil { return .null }
        switch value {
        case let v as Int: return .int(Int64(v))
        case let v as Int64: return .int(v)
        case let v as Int32: return .int(Int64(v))
        case let v as Bool: return .bool(v)
        case let v as Double: return .double(v)
        case let v as String: return .string(v)
        case let v as Date: return .date(v)
        case let v as UUID: return .uuid(v)
        default: return nil
        }
    }

    /// Whether `type` is an `Optional`.
    static func isOptional(_ type: Any.Type) -> Bool { type is any AnyOptional.Type }
}

protocol AnyOptional { var isNil: Bool { get } }
extension Optional: AnyOptional { var isNil: Bool { self == nil } }

// MARK: The expressions understood

protocol ConditionExpression {
    func condition<Record: PersistentRecord>(_ compiler: ConditionCompiler<Record>) -> RecordCondition
}

protocol OperandExpression {
    func operand<Record: PersistentRecord>(_ compiler: ConditionCompiler<Record>) -> ConditionOperand?
}

// Swift evaluates `a && b` and `a || b` left to right and stops early: `b` decides nothing
// for a record on which `a` throws (a force unwrap of nil), the whole predicate throws. So
// where `a` may throw, `b` is not used to decide (nor to pick an index): such records are
// decoded and the predicate itself throws, as Swift's evaluation does.

extension PredicateExpressions.Conjunction: ConditionExpression {
    func condition<Record: PersistentRecord>(_ compiler: ConditionCompiler<Record>) -> RecordCondition {
        .and(compiler.condition(lhs), ConditionCompiler<Record>.mayThrow(lhs) ? .unknown : compiler.condition(rhs))
    }
}

extension PredicateExpressions.Disjunction: ConditionExpression {
    func condition<Record: PersistentRecord>(_ compiler: ConditionCompiler<Record>) -> RecordCondition {
        .or(compiler.condition(lhs), ConditionCompiler<Record>.mayThrow(lhs) ? .unknown : compiler.condition(rhs))
    }
}

extension PredicateExpressions.Negation: ConditionExpression {
    func condition<Record: PersistentRecord>(_ compiler: ConditionCompiler<Record>) -> RecordCondition {
        .not(compiler.condition(wrapped))
    }
}

extension PredicateExpressions.Equal: ConditionExpression {
    func condition<Record: PersistentRecord>(_ compiler: ConditionCompiler<Record>) -> RecordCondition {
        compiler.compare(lhs, .equal, rhs)
    }
}

extension PredicateExpressions.NotEqual: ConditionExpression {
    func condition<Record: PersistentRecord>(_ compiler: ConditionCompiler<Record>) -> RecordCondition {
        compiler.compare(lhs, .notEqual, rhs)
    }
}

extension PredicateExpressions.Comparison: ConditionExpression {
    func condition<Record: PersistentRecord>(_ compiler: ConditionCompiler<Record>) -> RecordCondition {
        let comparison: RecordCondition.Comparison
        switch op {
        case .lessThan: comparison = .less
        case .lessThanOrEqual: comparison = .lessOrEqual
        case .greaterThan: comparison = .greater
        case .greaterThanOrEqual: comparison = .greaterOrEqual
        @unknown default: return .unknown
        }
        return compiler.compare(lhs, comparison, rhs)
    }
}

extension PredicateExpressions.SequenceStartsWith: ConditionExpression {
    func condition<Record: PersistentRecord>(_ compiler: ConditionCompiler<Record>) -> RecordCondition {
        guard case .field(let attribute, let isOptional)? = compiler.operand(base), attribute.type == .string,
              case .constant(.string(let prefix))? = compiler.operand(self.prefix),
              prefix.utf8.allSatisfy({ $0 < 0x80 })
        else { return .unknown }
        return .startsWith(attributeID: attribute.id, prefix: Array(prefix.utf8), absent: compiler.absentValue(attribute, isOptional))
    }
}

extension PredicateExpressions.Value: OperandExpression {
    func operand<Record: PersistentRecord>(_ compiler: ConditionCompiler<Record>) -> ConditionOperand? {
        ConditionConstant.value(value).map { .constant($0) }
    }
}

extension PredicateExpressions.NilLiteral: OperandExpression {
    func operand<Record: PersistentRecord>(_ compiler: ConditionCompiler<Record>) -> ConditionOperand? { .constant(.null) }
}

extension PredicateExpressions.KeyPath: OperandExpression {
    func operand<R: PersistentRecord>(_ compiler: ConditionCompiler<R>) -> ConditionOperand? {
        guard let variable = root as? PredicateExpressions.Variable<R>, variable.key == compiler.variable,
              let keyPath = keyPath as? KeyPath<R, Output>,
              let attribute = compiler.attribute(for: keyPath)
        else { return nil }
        return .field(attribute, isOptional: ConditionConstant.isOptional(Output.self))
    }
}

extension PredicateExpressions.KeyPath: ConditionExpression {
    /// A Boolean property used as a condition: `$0.isDone`, `!$0.isDone`.
    func condition<R: PersistentRecord>(_ compiler: ConditionCompiler<R>) -> RecordCondition {
        guard Output.self == Bool.self, case .field(let attribute, _)? = operand(compiler), attribute.type == .bool else { return .unknown }
        return .compare(attributeID: attribute.id, .equal, .bool(true), absent: compiler.absentValue(attribute, false))
    }
}

/// Where verifying key paths (`ConditionCompiler.attribute(for:)`: a few decodes) is kept
/// between compiles — a record type decodes the same way every time. Implemented with a lock
/// by the schema binding, which keeps one per store.
package protocol KeyPathVerdicts: Sendable {
    /// Whether the key path was verified, or nil when it was not probed yet.
    func verdict(for key: ProbeKey) -> Bool?
    /// Keeps a key path's verdict.
    func record(_ verdict: Bool, for key: ProbeKey)
}

/// One key path of one record type, read as one attribute (`KeyPathVerdicts`).
package struct ProbeKey: Hashable, Sendable {
    let record: ObjectIdentifier
    /// The key path as Swift describes it (`\Note.rating`).
    let keyPath: String
    let attributeID: UInt32
    let type: AttributeType
    /// The probe records hold every attribute: a version with others probes again.
    let attributeCount: Int
}
