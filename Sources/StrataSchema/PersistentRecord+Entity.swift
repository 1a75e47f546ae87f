extension PersistentRecord {
    /// Derives the entity from the `Codable` conformance (see ``PersistentRecord``), applying
    /// ``attributeOptions``, ``attributeDefaults``, ``originalAttributeNames``,
    /// ``entityName`` and ``originalEntityName``.
    ///
    /// - Throws: ``RecordCodingError/unknownAttribute(type:attribute:)`` when a customization
    ///   names a property the type does not have (a typo would otherwise be silently ignored);
    ///   ``RecordCodingError/cannotDeriveEntity(type:reason:)``;
    ///   ``RecordCodingError/unsupportedStructure(type:reason:)``.
    public static func entity() throws(RecordCodingError) -> Entity {
        let discovered = try EntityDiscovery.attributes(of: Self.self)
        let names = Set(discovered.map(\.name))
        let customized = Set(attributeOptions.keys).union(attributeDefaults.keys).union(originalAttributeNames.keys)
        if let unknown = customized.subtracting(names).sorted().first {
            throw .unknownAttribute(type: String(describing: Self.self), attribute: unknown)
        }
        let attributes = discovered.map { attribute in
            Attribute(name: attribute.name, type: attribute.type, isOptional: attribute.isOptional,
                      defaultValue: attributeDefaults[attribute.name] ?? .null, options: attributeOptions[attribute.name] ?? [],
                      originalName: originalAttributeNames[attribute.name])
        }
        return Entity(entityName, originalName: originalEntityName, attributes: attributes)
    }
}
