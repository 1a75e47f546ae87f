#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Strata
import StrataIO
import StrataSchema

/// `strata import FILE NEWPATH`: a new store from an export (Docs/Tools.md, "The export
/// format"), built beside NEWPATH and renamed to it once complete and verified.
enum ImportCommand {
    static let command = StrataTool.Command(
        name: "import", grammar: CommandArguments.Grammar(positionals: ["FILE", "NEWPATH"]),
        summary: "a new store from a strata export file",
        help: """
            usage: strata import FILE NEWPATH

            Creates a new store in the folder NEWPATH from FILE, written by strata export: the
            same schema catalog (every version, with its ids), the same records with the same
            ids, relationships (both sides of each inverse) and values, and the same next id for
            each entity. The store is built in NEWPATH.importing, verified, and renamed to
            NEWPATH only when complete: NEWPATH never holds a half-written store. Indexes are
            rebuilt; the history journal starts empty.

            NEWPATH must not exist. A file that is not a whole export of a version this tool
            reads (malformed, cut short, of an unknown format version) is refused with the
            number of the line at fault, and nothing is left behind.

            exit status: 0; 3 when FILE cannot be read or is not a valid export, NEWPATH exists,
            or the store cannot be written.

            """,
        run: run)

    static func run(_ line: CommandArguments, _ output: ToolOutput) throws -> ToolExitStatus {
        let (file, destination) = (line.positionals[0], line.positionals[1])
        let records = try importExport(from: file, to: destination, output: output)
        output.line("imported \(plural(records, "record")) into \(destination)")
        return .success
    }

    /// Builds the store at `destination` from the export at `path`; returns the records imported.
    /// - Throws: `ImportError` naming the line at fault (or the file's I/O error);
    ///   `StoreImportError`; `StrataError.io` when the store cannot be written.
    ///   No store and no folder beside `destination` is left behind.
    static func importExport(from path: String, to destination: String, fileSystem: any FileSystem = POSIXFileSystem(),
                             output: ToolOutput = ToolOutput(output: { _ in }, error: { _ in })) throws -> Int {
        var lines = try LineReader(path: path, fileSystem: fileSystem)
        defer { lines.close() }
        do {
            return try importExport(from: &lines, to: destination, fileSystem: fileSystem, output: output)
        } catch ImportError.line(let number, let reason) where number == lines.count && lines.lastLineIsCut {
            throw ImportError.line(number, "the file ends inside this line (cut short?): \(reason)")
        }
    }

    private static func importExport(from lines: inout LineReader, to destination: String, fileSystem: any FileSystem,
                                     output: ToolOutput) throws -> Int {
        var reader = ExportReader()
        // Read the header and the catalog before creating anything.
        var catalog: SchemaCatalog?
        while catalog == nil {
            guard let (number, text) = try lines.next() else { throw ImportError.line(lines.count + 1, "the file ends before its schema catalog") }
            catalog = try reader.read(text, number: number)
        }
        guard let catalog else { return 0 }
        let importer = try StoreImporter(creating: destination, catalog: catalog, fileSystem: fileSystem)
        do {
            reader.importer = importer
            let progress = ProgressBar(total: Int(clamping: reader.totalRecords), label: "import", output: output)
            while !reader.ended {
                guard let (number, text) = try lines.next() else {
                    throw ImportError.line(lines.count + 1, "the file ends before its end line (cut short?)")
                }
                _ = try reader.read(text, number: number)
                progress.update(done: reader.recordsRead)
            }
            progress.finish()
            while let (number, text) = try lines.next() {
                if !text.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { throw ImportError.line(number, "text after the end line") }
            }
            try importer.finish()
        } catch {
            importer.abandon()
            throw error
        }
        return reader.recordsRead
    }
}

/// Reads an export line by line (Docs/Tools.md, "The export format"), checking its order and
/// counts; records go to `importer`.
struct ExportReader {
    /// Where the reader is in the file.
    private enum Stage {
        case header, catalog, versions, records, ended
    }

    private var stage = Stage.header
    private var catalogVersionsExpected = 0
    private var nextIDs: (version: UInt32, entity: UInt32, property: UInt32) = (1, 1, 1)
    private var versions: [CatalogVersion] = []
    private(set) var totalRecords: UInt64 = 0
    private var entitiesExpected = 0
    private var entitiesRead = 0
    private(set) var recordsRead = 0
    var importer: StoreImporter?
    /// The entity whose records come now.
    private var entity: EntityLayout?

    var ended: Bool { stage == .ended }

    /// An entity's name and properties, by name, in the newest catalog version that has it.
    private struct EntityLayout {
        var id: UInt32
        var name: String
        var records: UInt64
        var recordsRead: UInt64 = 0
        var properties: [String: (id: UInt32, type: AttributeType?)]
    }

    /// Reads line `number`; returns the catalog once its last version was read.
    /// - Throws: `ImportError.line` for a line that is not what comes next; what the importer throws.
    mutating func read(_ text: [UInt8], number: Int) throws -> SchemaCatalog? {
        let json: JSONValue
        do { json = try JSONReader.parse(text[...]) } catch { throw ImportError.line(number, "not JSON: \(error)") }
        do {
            return try read(json, number: number)
        } catch let mismatch as ExportFormat.Mismatch {
            throw ImportError.line(number, mismatch.reason)
        } catch let error as StoreImportError {
            if case .record(let position, let reason) = error { throw ImportError.line(position, reason) }
            throw error
        }
    }

    private mutating func read(_ json: JSONValue, number: Int) throws -> SchemaCatalog? {
        switch stage {
        case .header:
            guard (try? ExportFormat.string(json, "format")) == ExportFormat.formatName else {
                throw ExportFormat.Mismatch("not a strata export: the first line has no \"format\":\"\(ExportFormat.formatName)\"")
            }
            let version = try ExportFormat.uint64(json, "version")
            guard version == ExportFormat.version else {
                throw ImportError.unsupportedVersion(line: number, found: version, supported: ExportFormat.version)
            }
            catalogVersionsExpected = Int(try ExportFormat.uint32(json, "catalogVersions"))
            entitiesExpected = Int(try ExportFormat.uint32(json, "entities"))
            totalRecords = try ExportFormat.uint64(json, "records")
            stage = .catalog
        case .catalog:
            let catalog = try ExportFormat.member(json, "catalog")
            nextIDs = (try ExportFormat.uint32(catalog, "nextVersionID"), try ExportFormat.uint32(catalog, "nextEntityID"),
                       try ExportFormat.uint32(catalog, "nextPropertyID"))
            stage = .versions
            if catalogVersionsExpected == 0 { return finishCatalog() }
        case .versions:
            versions.append(try ExportFormat.version(from: try ExportFormat.member(json, "schemaVersion")))
            if versions.count == catalogVersionsExpected { return finishCatalog() }
        case .records:
            if json["entityTree"] != nil {
                try finishEntity()
                try beginEntity(try ExportFormat.member(json, "entityTree"))
            } else if json["end"] != nil {
                try finishEntity()
                guard entitiesRead == entitiesExpected else {
                    throw ExportFormat.Mismatch("the header announces \(entitiesExpected) entities, the file has \(entitiesRead)")
                }
                let records = try ExportFormat.uint64(try ExportFormat.member(json, "end"), "records")
                guard records == UInt64(recordsRead), records == totalRecords else {
                    throw ExportFormat.Mismatch("the end line counts \(records) records, the header \(totalRecords), the file has \(recordsRead)")
                }
                stage = .ended
            } else {
                try readRecord(json, number: number)
            }
        case .ended:
            throw ExportFormat.Mismatch("text after the end line")
        }
        return nil
    }

    private mutating func finishCatalog() -> SchemaCatalog {
        stage = .records
        return SchemaCatalog(versions: versions, nextVersionID: nextIDs.version, nextEntityID: nextIDs.entity, nextPropertyID: nextIDs.property)
    }

    private mutating func beginEntity(_ json: JSONValue) throws {
        let id = try ExportFormat.uint32(json, "entityID")
        let name = try ExportFormat.string(json, "entity")
        guard let version = versions.last(where: { $0.entity(id: id) != nil }), let entity = version.entity(id: id) else {
            throw ExportFormat.Mismatch("no schema version has entity \(id)")
        }
        guard entity.name == name else { throw ExportFormat.Mismatch("entity \(id) is \(entity.name) in the catalog, not \(name)") }
        var properties: [String: (id: UInt32, type: AttributeType?)] = [:]
        for attribute in version.resolvedAttributes(ofEntity: id) { properties[attribute.name] = (attribute.id, attribute.type) }
        for relationship in version.resolvedRelationships(ofEntity: id) { properties[relationship.name] = (relationship.id, nil) }
        self.entity = EntityLayout(id: id, name: name, records: try ExportFormat.uint64(json, "records"), properties: properties)
        importer?.setNextID(try ExportFormat.uint64(json, "nextID"), ofEntity: id)
        entitiesRead += 1
    }

    private mutating func finishEntity() throws {
        guard let entity else { return }
        guard entity.recordsRead == entity.records else {
            throw ExportFormat.Mismatch("entity \(entity.name) announces \(entity.records) records; \(entity.recordsRead) came before this line")
        }
        self.entity = nil
    }

    private mutating func readRecord(_ json: JSONValue, number: Int) throws {
        guard var entity else { throw ExportFormat.Mismatch("a record before its entity's entityTree line") }
        let name = try ExportFormat.string(json, "entity")
        guard name == entity.name else { throw ExportFormat.Mismatch("a record of \(name) among the records of \(entity.name)") }
        guard let id = try? ExportFormat.recordID(try ExportFormat.member(json, "id")) else {
            throw ExportFormat.Mismatch("id must be a record id (a whole number from 1)")
        }
        guard case .object(let members) = try ExportFormat.member(json, "values") else { throw ExportFormat.Mismatch("values must be an object") }
        var values: [UInt32: Value] = [:]
        for member in members {
            guard let property = entity.properties[member.key] else {
                throw ExportFormat.Mismatch("\(entity.name) has no attribute or relationship \(member.key)")
            }
            let value: Value
            do throws(ExportFormat.Mismatch) {
                if let type = property.type {
                    value = try ExportFormat.attributeValue(member, type: type)
                } else {
                    value = try ExportFormat.relationshipValue(member.value)
                }
            } catch { throw ExportFormat.Mismatch("\(member.key): \(error.reason)") }
            values[property.id] = value  // a null is left out by the importer, but under an optional attribute with a default
        }
        if case .object(let members)? = json["codableBytes"] {
            for member in members {
                guard let property = entity.properties[member.key], case .codable? = property.type,
                      case .string(let base64) = member.value, let bytes = Data(base64Encoded: base64) else {
                    throw ExportFormat.Mismatch("codableBytes.\(member.key): not a codable attribute's base64")
                }
                values[property.id] = .codable([UInt8](bytes))
            }
        }
        try importer?.insert(entityID: entity.id, id: id, values: values, position: number)
        entity.recordsRead += 1
        self.entity = entity
        recordsRead += 1
    }
}

/// Why `strata import` refused an export file; nothing is left at the destination.
enum ImportError: Error, Equatable, CustomStringConvertible {
    /// Line `line` (from 1) is not what the export format puts there.
    case line(Int, String)
    /// The file cannot be opened or read: the I/O error.
    case file(String)
    /// The file is an export of a format version this tool does not read.
    case unsupportedVersion(line: Int, found: UInt64, supported: Int)

    var description: String {
        switch self {
        case .line(let number, let reason): "line \(number): \(reason)"
        case .file(let reason): reason
        case .unsupportedVersion(let line, let found, let supported):
            "line \(line): export format version \(found) is not supported (this tool reads version \(supported))"
        }
    }
}

/// The lines of a file, read in chunks through the I/O layer (memory: one chunk and one line).
struct LineReader {
    private let file: any StorageFile
    private var offset: UInt64 = 0
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEnd = false
    /// Lines returned so far.
    private(set) var count = 0
    /// Whether the last line returned ends the file without a line break (an export's last
    /// line has one: the file was cut short).
    private(set) var lastLineIsCut = false
    static let chunkBytes = 1 << 20

    /// Opens the file at `path` for reading; `close()` it once done.
    /// - Throws: `ImportError.file` when it cannot be opened.
    init(path: String, fileSystem: any FileSystem) throws {
        do { file = try fileSystem.openForReading(path) } catch let error as IOError { throw ImportError.file("\(error)") }
    }

    /// The next line (without its line break) and its number from 1, or nil at the end.
    /// - Throws: `ImportError.file` when the file cannot be read.
    mutating func next() throws -> (Int, [UInt8])? {
        while true {
            if let newline = buffer[start...].firstIndex(of: 0x0A) {
                let line = Array(buffer[start..<newline])
                start = newline + 1
                count += 1
                return (count, line)
            }
            if atEnd {
                guard start < buffer.count else { return nil }
                let line = Array(buffer[start...])
                start = buffer.count
                count += 1
                lastLineIsCut = true
                return (count, line)
            }
            buffer.removeSubrange(0..<start)
            start = 0
            let old = buffer.count
            buffer.append(contentsOf: repeatElement(0, count: Self.chunkBytes))
            let read: Int
            do {
                read = try buffer.withUnsafeMutableBytes { try file.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[old...]), at: offset) }
            } catch let error as IOError { throw ImportError.file("\(error)") }
            buffer.removeSubrange((old + read)...)
            offset += UInt64(read)
            if read == 0 { atEnd = true }
        }
    }

    /// Closes the file.
    func close() { file.close() }
}
