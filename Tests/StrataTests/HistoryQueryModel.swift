#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Strata

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
