import Foundation

// StrataBenchmarks: Strata measured side by side with a baseline. See CommandLineOptions
// for the roles this executable plays and README.md for the workloads.

let status: Int32
do {
    let options = try CommandLineOptions(arguments: Array(CommandLine.arguments.dropFirst()))
    switch options.role {
    case .driver:
        status = try BenchmarkDriver(options: options).run()
    case .workload(let name):
        PeakMemory.startSampling()
        status = WorkloadProcess.run(name: name, options: options)
    case .part(let qualifiedName):
        PeakMemory.startSampling()
        status = PartProcess.run(qualifiedName: qualifiedName, options: options)
    case .writer(let storePath):
        status = RecoveryWriter.run(storePath: storePath, byteLimit: options.writerByteLimit)
    case .list:
        for workload in WorkloadRegistry.all { print("\(workload.name): \(workload.summary)") }
        status = 0
    case .help:
        print(CommandLineOptions.usage)
        status = 0
    }
} catch let error as BenchmarkError {
    switch error {
    case .usage, .unknownWorkload: status = 2
    default: status = 1
    }
    StandardError.write("StrataBenchmarks: \(error)\n")
} catch {
    StandardError.write("StrataBenchmarks: \(error)\n")
    status = 1
}
exit(status)
