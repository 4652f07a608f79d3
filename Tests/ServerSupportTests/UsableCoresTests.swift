import NIOCore
import Testing
@testable import ServerSupport

@Suite struct UsableCoresTests {
    @Test func theAffinityMaskCountsItsBits() {
        #expect(UsableCores.parse(status: "Name:\tx\nCpus_allowed:\t2\nCpus_allowed_list:\t1\n") == 1)
        #expect(UsableCores.parse(status: "Cpus_allowed:\t3\n") == 2)
        #expect(UsableCores.parse(status: "Cpus_allowed:\tffffffff,0000000f\n") == 36)
        #expect(UsableCores.parse(status: "Cpus_allowed:\tzz\n") == nil)
        #expect(UsableCores.parse(status: "Name:\tx\n") == nil)
    }

    @Test func theCountIsAtLeastOneAndAtMostNIOs() {
        #expect((1...System.coreCount).contains(UsableCores.count()))
    }
}
