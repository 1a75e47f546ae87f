/// What an app changes to make a difference possible, said where the difference is reported
/// (`schemaMismatch`, `MigrationPlanError`): the exact declaration to add, not only "needs a
/// migration".
extension SchemaDifference {
    /// For a difference that is not lightweight: the change that makes it possible, as one
    /// sentence with the code to write; nil for a lightweight difference.
    package var fix: String? {
        guard isBlocking else { return nil }
        let transform = "rewrite \(entity) in a custom stage with a RecordTransform of \(entity) (Docs/Migrations.md)"
        switch change {
        case .attributeBecameRequired(let name, true, true):
            return "records saved with \(name) nil keep nil in its index, and would read as the default: drop unique/indexed from "
                + "\(entity).\(name) in this version, or " + transform + " that sets \(name) (`old.\(name) ?? <default>`)"
        case .attributeAdded(let name, _, _, _), .attributeBecameRequired(let name, _, _):
            let type = attributeType(of: name)
            return "old records have no value for \(entity).\(name): declare its default — "
                + "`static var attributeDefaults: [String: Value] { [\"\(name)\": \(Self.exampleDefault(for: type))] }` on \(entity) "
                + "(a Swift default such as `= false` is not visible to Strata through Codable) — or make it optional, or " + transform
        case .attributeTypeChanged:
            return "stored values do not read as the new type: " + transform
        case .attributeMadeCodable(let name, _, _, _):
            return "drop unique/indexed from \(entity).\(name) in this version, or " + transform
        case .relationshipBecameToOne:
            return "stored lists of several ids do not read as one: " + transform
        case .parentChanged:
            return "rewrite the records in a custom stage with one RecordTransform per target entity (Docs/Migrations.md, \"Adopting a parent\")"
        default:
            return transform
        }
    }

    /// Whether the difference keeps a store from opening without records rewritten. A new
    /// unique constraint is not: building its index checks it, and refuses it (storing
    /// nothing) when two records share a value.
    package var isBlocking: Bool {
        if case .uniqueAdded = change { return false }
        return !isLightweight
    }

    /// The type a difference's attribute has in the newer version, when the change says it.
    private func attributeType(of name: String) -> AttributeType? {
        if case .attributeAdded(_, let type, _, _) = change { return type }
        return nil
    }

    /// A default value literal of `type`, for messages.
    static func exampleDefault(for type: AttributeType?) -> String {
        switch type {
        case .bool?: "false"
        case .int?: "0"
        case .double?: "0.0"
        case .string?: "\"\""
        case .data?: ".data([])"
        case .date?: ".date(Date(timeIntervalSinceReferenceDate: 0))"
        case .uuid?: ".uuid(UUID())"
        case .codable?, nil: "<a value>"
        }
    }

    /// Renames the differences probably stand for: within one entity, an attribute removed
    /// while one of the same type is added (ids differ, so no `originalName` was declared and
    /// the removed attribute's stored values would be dropped). Each as (entity, removed, added).
    package static func probableRenames(in differences: [SchemaDifference]) -> [(entity: String, removed: String, added: String)] {
        var result: [(entity: String, removed: String, added: String)] = []
        for removal in differences {
            guard case .attributeRemoved(let removed, let type) = removal.change else { continue }
            let candidate = differences.first { difference in
                guard difference.entity == removal.entity, case .attributeAdded(_, let addedType, _, _) = difference.change else { return false }
                return addedType == type
            }
            if let candidate, case .attributeAdded(let added, _, _, _) = candidate.change {
                result.append((removal.entity, removed, added))
            }
        }
        return result
    }

    /// The sentence that tells how to declare a probable rename.
    package static func renameHint(entity: String, removed: String, added: String) -> String {
        "if \(entity).\(added) is \(removed) renamed, declare `static var originalAttributeNames: [String: String] { [\"\(added)\": \"\(removed)\"] }` "
            + "on \(entity): then its stored values are kept and the change is lightweight"
    }

    /// Each difference in words for an error message: the blocking ones first, marked, each
    /// with its fix; then a probable rename's hint for every removed attribute that looks
    /// renamed.
    package static func explained(_ differences: [SchemaDifference]) -> [String] {
        let ordered = differences.filter(\.isBlocking) + differences.filter { !$0.isBlocking }
        var lines = ordered.map { difference in
            guard let fix = difference.fix else { return difference.description }
            return "[needs migration] \(difference.description) — fix: \(fix)"
        }
        for rename in probableRenames(in: differences) {
            lines.append("[probable rename] " + renameHint(entity: rename.entity, removed: rename.removed, added: rename.added))
        }
        return lines
    }
}
