#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Strata
import StrataTestSupport

/// A transaction of a test's model of the history journal, as a `HistoryDescriptor` selects
/// it (`HistoryModelTests`, `HistoryAdversaryTests`).
protocol HistoryModelTransaction {
    var token: UInt64 { get }
    var author: String? { get }
    /// Microseconds since 1970, as the journal stored it.
    var microseconds: Int64 { get }
    /// This transaction with only the changes of `entities`; nil when none is left.
    func keeping(entities: Set<String>) -> Self?
}

extension HistoryDescriptor {
    /// What the journal must answer to this descriptor, from the model's `journal` (oldest
    /// first): tokens after `after` through `through`, committed at or before `until`
    /// (`untilMicroseconds`, the value `until` was made from), by `authors` and not by
    /// `excludedAuthors`, with only the changes of `selected` (the filter's entities and
    /// their sub-entities; nil: all), in order, at most `limit`.
    func modelAnswer<Transaction: HistoryModelTransaction>(_ journal: [Transaction], untilMicroseconds: Int64?,
                                                          selected: Set<String>?) -> [Transaction] {
        var answer: [Transaction] = []
        for transaction in journal {
            guard transaction.token > (after?.rawValue ?? 0), transaction.token <= (through?.rawValue ?? .max),
                  transaction.microseconds <= (untilMicroseconds ?? .max) else { continue }
            if let authors, !(transaction.author.map(authors.contains) ?? false) { continue }
            if let author = transaction.author, excludedAuthors.contains(author) { continue }
            if let selected {
                guard let kept = transaction.keeping(entities: selected) else { continue }
                answer.append(kept)
            } else {
                answer.append(transaction)
            }
        }
        if order == .reverse { answer.reverse() }
        if let limit { answer = Array(answer.prefix(limit)) }
        return answer
    }

    /// The descriptor in one line, for a failing query's message.
    var modelDescription: String {
        "after \(after.map { "\($0)" } ?? "-") through \(through.map { "\($0)" } ?? "-") until \(until.map { "\(historyMicroseconds($0))" } ?? "-")"
            + " entities \(entityNames?.sorted() ?? []) authors \(authors?.sorted() ?? []) excluded \(excludedAuthors.sorted())"
            + " limit \(limit.map(String.init) ?? "-") \(order)"
    }
}

/// Microseconds since 1970, as the journal stores a transaction's timestamp.
func historyMicroseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1_000_000).rounded()) }

extension HistoryDescriptor {
    /// A random descriptor over a model's `journal`, drawn the same way for both journal
    /// suites: `after` and `through` up to `lastToken + 1`, an `until` within a microsecond of
    /// a transaction's time (returned as `untilMicroseconds`), each of `entities` with odds 1 in
    /// `entityOdds` (else one of the first `fallbackEntities`), authors among `authors` and
    /// "nobody", included and excluded, a limit, an order.
    static func random<Transaction: HistoryModelTransaction>(
        _ journal: [Transaction], lastToken: UInt64, entities: [String], entityOdds: UInt64, fallbackEntities: UInt64,
        authors: [String?], using random: inout SeededRandom
    ) -> (HistoryDescriptor, untilMicroseconds: Int64?) {
        var descriptor = HistoryDescriptor()
        func token() -> UInt64 { random.next() % (lastToken + 2) }
        if random.next() % 2 == 0 { descriptor.after = HistoryToken(rawValue: token()) }
        if random.next() % 3 == 0 { descriptor.through = HistoryToken(rawValue: token()) }
        var untilMicroseconds: Int64?
        if random.next() % 4 == 0, !journal.isEmpty {
            let chosen = journal[Int(random.next() % UInt64(journal.count))].microseconds + Int64(random.next() % 3) - 1
            untilMicroseconds = chosen
            descriptor.until = Date(timeIntervalSince1970: Double(chosen) / 1_000_000)
        }
        if random.next() % 2 == 0 {
            var names = Set<String>()
            for entity in entities where random.next() % entityOdds == 0 { names.insert(entity) }
            if names.isEmpty { names.insert(entities[Int(random.next() % fallbackEntities)]) }
            descriptor.entityNames = names
        }
        let candidates = authors.compactMap { $0 } + ["nobody"]
        if random.next() % 3 == 0 { descriptor.authors = Set(candidates.filter { _ in random.next() % 2 == 0 }) }
        if random.next() % 3 == 0 { descriptor.excludedAuthors = Set(candidates.filter { _ in random.next() % 3 == 0 }) }
        switch random.next() % 4 {
        case 0: descriptor.limit = Int(random.next() % 4)
        case 1: descriptor.limit = Int(random.next() % 60)
        default: break
        }
        if random.next() % 2 == 0 { descriptor.order = .reverse }
        return (descriptor, untilMicroseconds)
    }
}
