/// Every workload, in the order a full run takes them.
///
/// To add one: write `Workloads/<Name>Workload.swift` with an enum holding
/// `static let workload = Workload(name:summary:run:)`, and list it here.
enum WorkloadRegistry {
    static let all: [Workload] = [
        PageAppendWorkload.workload,
        OpenCleanWorkload.workload,
        OpenRecoverWorkload.workload,
        GroupCommitWorkload.workload,
        TreeInsertWorkload.workload,
        TreeReadByIDWorkload.workload,
        TreeScanWorkload.workload,
        InsertWorkload.workload,
        InsertWorkload.codable,
        ReadByIDWorkload.workload,
        ReadByIDWorkload.codable,
        ScanFilterWorkload.workload,
        CountWorkloads.all,
        CountWorkloads.filtered,
        ReopenFirstFetchWorkload.workload,
        MigrationWorkloads.lightweight,
        MigrationWorkloads.split,
        ContextSplitWorkload.workload,
        ResultsObserverWorkload.workload,
        InsertWithHistoryWorkload.workload,
        ChangeWithHistoryWorkloads.update,
        ChangeWithHistoryWorkloads.delete,
        HistoryFetchWorkloads.tail,
        HistoryFetchWorkloads.entity,
        LargeValueWorkload.workload,
        BackupWorkload.workload,
    ]

    /// The workload called `name`, if there is one.
    static func workload(named name: String) -> Workload? {
        all.first { $0.name == name }
    }

    /// The workloads named by `--only`, in the order given (each once); all of them when nil.
    static func select(_ names: [String]?) throws -> [Workload] {
        guard let names else { return all }
        var selected: [Workload] = []
        for name in names where !selected.contains(where: { $0.name == name }) {
            guard let workload = workload(named: name) else {
                throw BenchmarkError.unknownWorkload(name, available: all.map(\.name))
            }
            selected.append(workload)
        }
        guard !selected.isEmpty else { throw BenchmarkError.usage("--only names no workload") }
        return selected
    }
}
