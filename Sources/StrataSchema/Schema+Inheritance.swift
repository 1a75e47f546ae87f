extension Schema {
    /// The chain of entities from the root ancestor down to the entity named `name`
    /// (the last element is that entity).
    ///
    /// - Throws: ``SchemaError/unknownEntity(_:)`` if there is no such entity,
    ///   ``SchemaError/unknownParent(entity:parent:)`` if an ancestor's parent is missing,
    ///   ``SchemaError/inheritanceCycle(_:)`` if the chain loops.
    public func ancestry(of name: String) throws(SchemaError) -> [Entity] {
        try ancestry(of: name, in: entitiesByName)
    }

    /// All attributes of the entity named `name`: inherited ones first (root ancestor's first),
    /// then its own, each group in declaration order.
    ///
    /// - Throws: as ``ancestry(of:)``.
    public func resolvedAttributes(of name: String) throws(SchemaError) -> [Attribute] {
        try ancestry(of: name).flatMap(\.attributes)
    }

    /// All relationships of the entity named `name`, inherited ones first, as
    /// ``resolvedAttributes(of:)``.
    ///
    /// - Throws: as ``ancestry(of:)``.
    public func resolvedRelationships(of name: String) throws(SchemaError) -> [Relationship] {
        try ancestry(of: name).flatMap(\.relationships)
    }

    /// Whether the entity named `name` is `ancestor` or inherits from it. False when either
    /// is unknown or the chain is broken.
    public func entity(_ name: String, isKindOf ancestor: String) -> Bool {
        ((try? ancestry(of: name)) ?? []).contains { $0.name == ancestor }
    }

    /// The ancestry chain, with entities looked up in `index`. Cycle detection is bounded by
    /// the number of entities, so a malformed schema never loops.
    package func ancestry(of name: String, in index: [String: Entity]) throws(SchemaError) -> [Entity] {
        guard let entity = index[name] else { throw .unknownEntity(name) }
        var chain = [entity]
        var seen: Set<String> = [name]
        var current = entity
        while let parentName = current.parent {
            guard let parent = index[parentName] else { throw .unknownParent(entity: current.name, parent: parentName) }
            guard seen.insert(parentName).inserted else {
                let names = chain.map(\.name)  // child → parent order
                let start = names.firstIndex(of: parentName) ?? 0
                throw .inheritanceCycle(Array(names[start...]) + [parentName])
            }
            chain.append(parent)
            current = parent
        }
        return chain.reversed()
    }
}
