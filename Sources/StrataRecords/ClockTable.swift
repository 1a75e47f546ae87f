/// A cache table of values (page objects) keyed by (page id, LSN), bounded by the total cost of its entries,
/// with CLOCK (second chance) eviction — the structure behind `NodeCache`.
///
/// Entries live in dense arrays (key, object, cost, referenced bit); an open-addressing index
/// (linear probing, power-of-two size, at most half full) maps a key to its entry. A lookup
/// hashes one word and probes a few slots; a hit sets the entry's referenced bit. An insert
/// appends an entry (not referenced), then, while the total cost is over the budget, the clock
/// hand sweeps the entries: a referenced entry loses its bit and is passed over, an
/// unreferenced one is removed (the last entry moves into its place, and the hand passes it,
/// so a new entry is never the next one examined). So an entry read again since the hand last
/// passed survives, and entries read once — a pass over a large tree — go first.
///
/// Nothing is allocated per operation once the arrays have grown to the working set (the index
/// grows by doubling and never shrinks). Not thread-safe: `NodeCache` holds it in a mutex.
package struct ClockTable<Object> {
    /// A cache key: a page id and the LSN of its image.
    package struct Key: Equatable {
        package var pageID: UInt64
        package var lsn: UInt64

        package init(pageID: UInt64, lsn: UInt64) {
            self.pageID = pageID
            self.lsn = lsn
        }
    }

    /// The most cost kept (an entry costing more than the budget is still kept, alone).
    package let budget: Int
    private var keys: [Key] = []
    private var objects: [Object] = []
    private var costs: [Int] = []
    private var referenced: [Bool] = []
    /// Open-addressing index: -1 for an empty slot, else a position in the entry arrays.
    private var slots: [Int32]
    private var shift: UInt64
    private var hand = 0
    /// The total cost of the entries.
    package private(set) var cost = 0

    /// An empty table keeping at most `budget` of cost.
    package init(budget: Int) {
        self.budget = budget
        slots = [Int32](repeating: -1, count: 16)
        shift = 64 - 4
    }

    /// The number of entries.
    package var count: Int { keys.count }

    /// The object under `key`, marked as used; nil when not cached.
    package mutating func get(_ key: Key) -> Object? {
        guard let slot = find(key) else { return nil }
        let position = Int(slots[slot])
        referenced[position] = true
        return objects[position]
    }

    /// What `body` makes of the object under `key` (marked as used), or nil when it is not
    /// cached: for a caller that casts the object, which then is not copied out of the table
    /// first.
    @inline(__always)
    package mutating func withObject<Result>(_ key: Key, _ body: (borrowing Object) -> Result) -> Result? {
        guard let slot = find(key) else { return nil }
        let position = Int(slots[slot])
        referenced[position] = true
        return body(objects[position])
    }

    /// Whether `key` is cached, without marking it used (tests).
    package func contains(_ key: Key) -> Bool { find(key) != nil }

    /// Caches `object` under `key` with `cost` (a key already present keeps its object), then
    /// evicts until the total cost is within the budget.
    package mutating func insert(_ object: Object, for key: Key, cost: Int) {
        guard find(key) == nil else { return }
        if (keys.count + 1) * 2 > slots.count { grow() }
        let position = keys.count
        keys.append(key)
        objects.append(object)
        costs.append(cost)
        referenced.append(false)
        var slot = home(key)
        while slots[slot] >= 0 { slot = (slot + 1) & (slots.count - 1) }
        slots[slot] = Int32(position)
        self.cost += cost
        while self.cost > budget && keys.count > 1 { evictOne() }
    }

    /// The entry the next eviction would remove if nothing is looked up meanwhile: the first
    /// entry from the hand not marked used (past a whole turn of used ones, the entry at the
    /// hand) — its key and position, for `passVictim(at:)`. Nil when empty. Changes nothing.
    package func nextVictim() -> (key: Key, position: Int)? {
        victimPosition().map { (keys[$0], $0) }
    }

    /// Passes over the victim `nextVictim()` named (at `position`, nothing changed since) as
    /// an eviction would pass over a used entry: every entry from the hand to it loses its
    /// used mark, and the hand moves past it. (An admission refused in the victim's favor
    /// gives it this second chance, so the next refusal weighs another entry — the hand keeps
    /// turning even when nothing is inserted.)
    package mutating func passVictim(at victim: Int) {
        guard victim < keys.count else { return }
        var position = hand < keys.count ? hand : 0
        while true {
            referenced[position] = false
            if position == victim { break }
            position = position + 1 < keys.count ? position + 1 : 0
        }
        hand = victim + 1
    }

    private func victimPosition() -> Int? {
        guard !keys.isEmpty else { return nil }
        let start = hand < keys.count ? hand : 0
        var position = start
        for _ in 0..<keys.count {
            if !referenced[position] { return position }
            position = position + 1 < keys.count ? position + 1 : 0
        }
        return start
    }

    /// A well-mixed 64-bit hash of a key (what the index uses).
    @inline(__always)
    package static func hash(_ key: Key) -> UInt64 {
        ((key.pageID &* 0x9E37_79B9_7F4A_7C15) ^ (key.lsn &* 0xC2B2_AE3D_27D4_EB4F)) &* 0xFF51_AFD7_ED55_8CCD
    }

    /// Removes every entry.
    package mutating func removeAll() {
        keys.removeAll()
        objects.removeAll()
        costs.removeAll()
        referenced.removeAll()
        for index in slots.indices { slots[index] = -1 }
        hand = 0
        cost = 0
    }

    /// The keys cached, in entry order (tests).
    package var cachedKeys: [Key] { keys }

    /// Checks the structure (tests): every entry indexed exactly once and found from its key,
    /// the cost adds up, the index at most half full. Returns a description of the first
    /// problem, or nil.
    package func structuralProblem() -> String? {
        guard keys.count == objects.count, keys.count == costs.count, keys.count == referenced.count else { return "array lengths differ" }
        guard costs.reduce(0, +) == cost else { return "cost \(cost) is not the sum of the entries' costs" }
        guard keys.count * 2 <= slots.count else { return "index more than half full" }
        var seen = [Bool](repeating: false, count: keys.count)
        for slot in slots where slot >= 0 {
            guard Int(slot) < keys.count, !seen[Int(slot)] else { return "slot \(slot) indexed twice or out of range" }
            seen[Int(slot)] = true
        }
        guard !seen.contains(false) else { return "an entry is not indexed" }
        for (position, key) in keys.enumerated() {
            guard let slot = find(key), Int(slots[slot]) == position else { return "entry \(position) is not found from its key" }
        }
        return nil
    }

    // MARK: Internals

    @inline(__always)
    private func home(_ key: Key) -> Int {
        // Multiplicative hashing of one word; the top bits index the table.
        Int(truncatingIfNeeded: Self.hash(key) >> shift)
    }

    /// The index slot holding `key`, or nil.
    @inline(__always)
    private func find(_ key: Key) -> Int? {
        let mask = slots.count - 1
        var slot = home(key)
        while true {
            let position = slots[slot]
            if position < 0 { return nil }
            if keys[Int(position)] == key { return slot }
            slot = (slot + 1) & mask
        }
    }

    private mutating func grow() {
        let size = slots.count * 2
        slots = [Int32](repeating: -1, count: size)
        shift -= 1
        for (position, key) in keys.enumerated() {
            var slot = home(key)
            while slots[slot] >= 0 { slot = (slot + 1) & (size - 1) }
            slots[slot] = Int32(position)
        }
    }

    /// Advances the clock hand until it removes one entry.
    private mutating func evictOne() {
        while true {
            if hand >= keys.count { hand = 0 }
            if referenced[hand] {
                referenced[hand] = false
                hand += 1
            } else {
                remove(at: hand)
                hand += 1  // the entry moved here (the newest) waits a whole turn
                return
            }
        }
    }

    /// Removes the entry at `position`: out of the index (backward-shift deletion, so probe
    /// chains stay unbroken), then the last entry moves into its place.
    private mutating func remove(at position: Int) {
        guard let removedSlot = find(keys[position]) else { return }
        let mask = slots.count - 1
        var hole = removedSlot
        slots[hole] = -1
        var slot = hole
        while true {
            slot = (slot + 1) & mask
            let moved = slots[slot]
            if moved < 0 { break }
            let home = home(keys[Int(moved)])
            // The entry at `slot` may move back into the hole unless its home lies cyclically
            // in (hole, slot].
            let staysPut = hole <= slot ? (hole < home && home <= slot) : (hole < home || home <= slot)
            if staysPut { continue }
            slots[hole] = moved
            slots[slot] = -1
            hole = slot
        }
        cost -= costs[position]
        let last = keys.count - 1
        if position != last {
            if let lastSlot = find(keys[last]) { slots[lastSlot] = Int32(position) }
            keys[position] = keys[last]
            objects.swapAt(position, last)
            costs[position] = costs[last]
            referenced[position] = referenced[last]
        }
        keys.removeLast()
        objects.removeLast()
        costs.removeLast()
        referenced.removeLast()
    }
}
