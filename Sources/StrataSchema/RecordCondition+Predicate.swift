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
    package static func compile<Record: PersistentRecord>(_ predicate: Predicate<Record>,
                                                          attributes: [String: ConditionAttribute]) -> RecordCondition
    {
        ConditionCompiler<Record>(attributes: attributes, variable: predicate.variable.key).condition(predicate.expression)
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

    /// The attribute a key path on `Record` reads, verified on two probe records; nil when
    /// the key path is not a stored attribute of a supported type.
    func attribute<Output>(for keyPath: KeyPath<Record, Output>) -> ConditionAttribute? {
        let description = "\(keyPath)"
        guard let dot = description.lastIndex(of: ".") else { return nil }
        let name = String(description[description.index(after: dot)...])
        guard let attribute = attributes[name], let (a, b) = Self.probeValues(attribute.type) else { return nil }
        var neutral: [String: Value] = [:]
        for (other, info) in attributes where other != name {
            if let value = Self.neutralValue(info.type) { neutral[other] = value }
        }
        func reads(_ value: Value) -> Bool {
            var values = neutral
            values[name] = value
            guard let probe = try? RecordDecoder().decode(Record.self, from: values) else { return false }
            return ConditionConstant.value(probe[keyPath: keyPath]) == value
        }
        return reads(a) && reads(b) ? attribute : nil
    }

    /// Two distinct values of a type the pre-filter compares, for probing.
    static func probeValues(_ type: AttributeType) -> (Value, Value)? {
        switch type {
        case .bool: (.bool(false), .bool(true))
        case .int: (.int(1), .int(2))
        case .double: (.double(1), .double(2))
        case .string: (.string("a"), .string("b"))
        case .date: (.date(Date(timeIntervalSinceReferenceDate: 1)), .date(Date(timeIntervalSinceReferenceDate: 2)))
        case .uuid: (.uuid(UUID(uuid: (1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))),
                     .uuid(UUID(uuid: (2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))))
        default: nil
        }
    }

    /// A value of `type` unlike both probe values (false for Booleans, which have two).
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
