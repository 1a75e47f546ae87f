extension PersistentRecord {
    /// Derives the entity from the `Codable` conformance (see ``PersistentRecord``), applying
    /// ``attributeOptions``, ``attributeDefaults``, ``originalAttributeNames``,
    /// ``relationshipRules``, ``entityName``, ``originalEntityName``, ``parentRecordType`` and
    /// ``isAbstractEntity``. `RecordID` properties become relationships; with a parent, the
    /// properties the parent type has are inherited and left out of the entity's own lists.
    ///
    /// - Throws: ``RecordCodingError/unknownAttribute(type:attribute:)`` when a customization
    ///   names a property the type does not have (a typo would otherwise be silently ignored),
    ///   or a relationship rule names an attribute;
    ///   ``RecordCodingError/cannotDeriveEntity(type:reason:)``, also when the type lacks a
    ///   property of its parent type or declares it with another type;
    ///   ``RecordCodingError/unsupportedStructure(type:reason:)``.
    public static func entity() throws(RecordCodingError) -> Entity {
        let typeName = String(describing: Self.self)
        var discovered = try EntityDiscovery.attributes(of: Self.self)
        let names = Set(discovered.map(\.name))
        let keyed = try keyPathCustomizations(attributes: discovered.map(\.name))
        let attributeOptions = Self.attributeOptions.merging(keyed.options) { _, byKeyPath in byKeyPath }
        let attributeDefaults = Self.attributeDefaults.merging(keyed.defaults) { _, byKeyPath in byKeyPath }
        let originalAttributeNames = Self.originalAttributeNames.merging(keyed.originalNames) { _, byKeyPath in byKeyPath }
        let relationshipRules = Self.relationshipRules.merging(keyed.rules) { _, byKeyPath in byKeyPath }
        let customized = Set(attributeOptions.keys).union(attributeDefaults.keys).union(originalAttributeNames.keys)
            .union(relationshipRules.keys)
        if let unknown = customized.subtracting(names).sorted().first {
            throw .unknownAttribute(type: typeName, attribute: unknown)
        }
        let relationshipNames = Set(discovered.filter { $0.destination != nil }.map(\.name))
        if let misplaced = Set(relationshipRules.keys).subtracting(relationshipNames).sorted().first {
            throw .unknownAttribute(type: typeName, attribute: misplaced)  // a rule for an attribute
        }
        if let parent = parentRecordType {
            discovered = try ownProperties(discovered, inheritingFrom: parent)
        }
        let attributes = discovered.filter { $0.destination == nil }.map { attribute in
            var result = Attribute(name: attribute.name, type: attribute.type, isOptional: attribute.isOptional,
                                   defaultValue: attributeDefaults[attribute.name] ?? .null, options: attributeOptions[attribute.name] ?? [],
                                   originalName: originalAttributeNames[attribute.name])
            result.codableProbe = attribute.probe
            return result
        }
        let relationships = discovered.compactMap { property -> Relationship? in
            guard let destination = property.destination else { return nil }
            let rule = relationshipRules[property.name] ?? RelationshipRule()
            return Relationship(name: property.name, destination: destination.type.entityName, inverse: rule.inverse,
                                cardinality: destination.cardinality, deleteRule: rule.deleteRule,
                                isOptional: destination.cardinality == .toMany || property.isOptional,
                                originalName: originalAttributeNames[property.name])
        }
        return Entity(entityName, parent: parentRecordType?.entityName, isAbstract: isAbstractEntity,
                      originalName: originalEntityName, attributes: attributes, relationships: relationships)
    }

    /// The customizations keyed by key path, keyed by attribute name (``KeyPathNames``).
    private static func keyPathCustomizations(attributes: [String]) throws(RecordCodingError)
        -> (options: [String: Attribute.Options], defaults: [String: Value], originalNames: [String: String], rules: [String: RelationshipRule])
    {
        let options = attributeOptionsByKeyPath, defaults = attributeDefaultsByKeyPath
        let originalNames = originalAttributeNamesByKeyPath, rules = relationshipRulesByKeyPath
        let keyPaths = Array(options.keys) + Array(defaults.keys) + Array(originalNames.keys) + Array(rules.keys)
        guard !keyPaths.isEmpty else { return ([:], [:], [:], [:]) }
        let names = try KeyPathNames.names(of: keyPaths, in: Self.self, attributes: attributes)
        func byName<V>(_ values: [PartialKeyPath<Self>: V]) -> [String: V] {
            Dictionary(values.compactMap { keyPath, value in names[keyPath].map { ($0, value) } }, uniquingKeysWith: { first, _ in first })
        }
        return (byName(options), byName(defaults), byName(originalNames), byName(rules))
    }

    /// The properties of `discovered` that `parent` (a record type, which itself repeats its
    /// own ancestors' properties) does not have.
    ///
    /// - Throws: ``RecordCodingError/cannotDeriveEntity(type:reason:)`` when a property of the
    ///   parent is missing or has another type, optionality or destination here.
    private static func ownProperties(_ discovered: [EntityDiscovery.DiscoveredAttribute],
                                      inheritingFrom parent: any PersistentRecord.Type) throws(RecordCodingError)
        -> [EntityDiscovery.DiscoveredAttribute]
    {
        let inherited = try parent.discoveredProperties()
        let byName = Dictionary(discovered.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for property in inherited {
            let reason: String
            if let own = byName[property.name] {
                if own == property { continue }
                reason = "its property \(property.name) differs from the one of its parent type \(parent) (same type, optionality and destination needed)"
            } else {
                reason = "it lacks the property \(property.name) of its parent type \(parent) (a sub-entity's type repeats its parent's properties)"
            }
            throw .cannotDeriveEntity(type: String(describing: Self.self), reason: reason)
        }
        let inheritedNames = Set(inherited.map(\.name))
        return discovered.filter { !inheritedNames.contains($0.name) }
    }

    /// Every property of the type as discovery sees it, inherited ones included.
    static func discoveredProperties() throws(RecordCodingError) -> [EntityDiscovery.DiscoveredAttribute] {
        try EntityDiscovery.attributes(of: Self.self)
    }

    /// The parent type and the destinations of the type's relationship properties: the types
    /// ``Schema/init(version:types:)`` adds to a schema. Empty when discovery fails (the
    /// entity's own derivation reports that).
    package static var referencedRecordTypes: [any PersistentRecord.Type] {
        let destinations = ((try? discoveredProperties()) ?? []).compactMap { $0.destination?.type }
        return (parentRecordType.map { [$0] } ?? []) + destinations
    }
}
