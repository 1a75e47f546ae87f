extension Schema {
    /// Checks that the schema is well formed; the first problem found is thrown.
    ///
    /// Checked, entity by entity in declaration order:
    /// - every name is 1 to ``maximumNameLength`` UTF-8 bytes (codable type names up to
    ///   ``maximumTypeNameLength``);
    /// - entity names are unique; within an entity, attribute and relationship names are
    ///   unique together, inherited ones included (a sub-entity cannot redeclare an inherited
    ///   property);
    /// - every parent exists and inheritance has no cycle;
    /// - every relationship's destination exists; an inverse exists on the destination (own or
    ///   inherited), refers back to this entity or one of its ancestors, and names this
    ///   relationship as its own inverse or names none;
    /// - every default value is `.null` or of its attribute's type;
    /// - no `originalName` is claimed twice, or equals the current name of another
    ///   declaration in the same scope (entities; properties of one entity), so a rename
    ///   always maps one old name to one new declaration.
    ///
    /// Allowed on purpose: a `.unique` optional attribute (null values are not compared, as in
    /// SQL); an abstract entity without sub-entities; a relationship that is its own inverse.
    ///
    /// - Throws: ``SchemaError`` describing the first problem.
    public func validate() throws(SchemaError) {
        let index = entitiesByName
        try checkEntityNames()
        for entity in entities {
            _ = try ancestry(of: entity.name, in: index)
        }
        for entity in entities {
            try checkProperties(of: entity, index: index)
            for relationship in entity.relationships {
                try checkRelationship(relationship, of: entity, index: index)
            }
        }
    }

    private func checkEntityNames() throws(SchemaError) {
        var names: Set<String> = []
        for entity in entities {
            try Self.checkName(entity.name, what: "entity")
            guard names.insert(entity.name).inserted else { throw .duplicateEntity(entity.name) }
            if let parent = entity.parent { try Self.checkName(parent, what: "the parent of entity \(entity.name)") }
        }
        try Self.checkOriginalNames(entities.map { ($0.name, $0.originalName) }, entity: nil)
    }

    private func checkProperties(of entity: Entity, index: [String: Entity]) throws(SchemaError) {
        var names: Set<String> = []
        for ancestor in try ancestry(of: entity.name, in: index) {
            let isOwn = ancestor.name == entity.name
            for name in ancestor.attributes.map(\.name) + ancestor.relationships.map(\.name) {
                if isOwn { try Self.checkName(name, what: "a property of entity \(entity.name)") }
                guard names.insert(name).inserted else { throw .duplicateProperty(entity: entity.name, name: name) }
            }
        }
        for attribute in entity.attributes {
            if case .codable(let typeName) = attribute.type, !Self.isValidName(typeName, maximum: Self.maximumTypeNameLength) {
                throw .invalidName(what: "the codable type of \(entity.name).\(attribute.name)", name: typeName)
            }
            guard attribute.defaultValue.isNull || attribute.type.accepts(attribute.defaultValue) else {
                throw .defaultValueTypeMismatch(entity: entity.name, attribute: attribute.name,
                                                type: attribute.type, value: attribute.defaultValue)
            }
        }
        let declared = entity.attributes.map { ($0.name, $0.originalName) } + entity.relationships.map { ($0.name, $0.originalName) }
        try Self.checkOriginalNames(declared, entity: entity.name)
    }

    private func checkRelationship(_ relationship: Relationship, of entity: Entity, index: [String: Entity]) throws(SchemaError) {
        guard index[relationship.destination] != nil else {
            throw .unknownDestination(entity: entity.name, relationship: relationship.name, destination: relationship.destination)
        }
        guard let inverseName = relationship.inverse else { return }
        func invalid(_ reason: String) -> SchemaError {
            .invalidInverse(entity: entity.name, relationship: relationship.name, inverse: inverseName, reason: reason)
        }
        let destinationRelationships = try ancestry(of: relationship.destination, in: index).flatMap(\.relationships)
        guard let inverse = destinationRelationships.first(where: { $0.name == inverseName }) else {
            throw invalid("\(relationship.destination) has no relationship named \(inverseName)")
        }
        let ancestors = try ancestry(of: entity.name, in: index).map(\.name)
        guard ancestors.contains(inverse.destination) else {
            throw invalid("\(relationship.destination).\(inverseName) refers to \(inverse.destination), not to \(entity.name)")
        }
        if let back = inverse.inverse, back != relationship.name {
            throw invalid("\(relationship.destination).\(inverseName) names \(back) as its inverse, not \(relationship.name)")
        }
    }

    /// Each original name is claimed once, and is not the current name of another declaration.
    private static func checkOriginalNames(_ declarations: [(name: String, originalName: String?)],
                                           entity: String?) throws(SchemaError)
    {
        let currentNames = Set(declarations.map(\.name))
        var claimed: Set<String> = []
        for (name, originalName) in declarations {
            guard let originalName, originalName != name else { continue }
            try checkName(originalName, what: "the originalName of \(entity.map { "\($0)." } ?? "")\(name)")
            guard claimed.insert(originalName).inserted, !currentNames.contains(originalName) else {
                throw .ambiguousOriginalName(entity: entity, originalName: originalName)
            }
        }
    }

    private static func checkName(_ name: String, what: String) throws(SchemaError) {
        guard isValidName(name, maximum: maximumNameLength) else { throw .invalidName(what: what, name: name) }
    }

    private static func isValidName(_ name: String, maximum: Int) -> Bool {
        !name.isEmpty && name.utf8.count <= maximum
    }
}
