@testable import DeviceHost
import Testing

/// `DeviceLifecycle`, transition by transition (issue 49: a stop during a start left the device running, and its view
/// then met the starting client's directory lock).
@Suite struct DeviceLifecycleTests {
    @Test func aStoppedDeviceStartsAndStops() {
        var m = DeviceLifecycle()
        #expect(m.startAsked() == .start)
        #expect(m.phase == .starting)
        #expect(m.started(true) == .none)
        #expect(m.phase == .running)
        #expect(m.startAsked() == .none)
        #expect(m.stopAsked() == .stop)
        #expect(m.phase == .stopping)
        m.stopped()
        #expect(m.phase == .stopped)
        #expect(m.stopAsked() == .none)
    }

    @Test func aStopDuringAStartTakesEffectWhenTheStartEnds() {
        var m = DeviceLifecycle()
        _ = m.startAsked()
        #expect(m.stopAsked() == .wait)
        #expect(m.stopWanted)
        #expect(m.started(true) == .stop, "the start ends, then the stop runs")
        #expect(m.phase == .stopping)
        m.stopped()
        #expect(m.phase == .stopped)
    }

    @Test func aFailedStartLeavesTheDeviceStopped() {
        var m = DeviceLifecycle()
        _ = m.startAsked()
        _ = m.stopAsked()
        #expect(m.started(false) == .none)
        #expect(m.phase == .stopped)
        #expect(!m.stopWanted)
    }

    @Test func aStartDuringAStopWaitsForIt() {
        var m = DeviceLifecycle()
        _ = m.startAsked()
        _ = m.started(true)
        _ = m.stopAsked()
        #expect(m.startAsked() == .wait)
        m.stopped()
        #expect(m.startAsked() == .start)
    }

    @Test func aSecondStartWaitsForTheFirst() {
        var m = DeviceLifecycle()
        _ = m.startAsked()
        #expect(m.startAsked() == .wait)
    }

    @Test func deletingARunningDeviceStopsItFirst() {
        var m = DeviceLifecycle()
        _ = m.startAsked()
        _ = m.started(true)
        #expect(m.deleteAsked() == .stop)
        #expect(!m.endsWaits)
        m.stopped()
        #expect(m.phase == .deleted)
        #expect(m.endsWaits)
        #expect(m.startAsked() == .refuse)
        #expect(m.stopAsked() == .refuse)
    }

    @Test func deletingAStartingDeviceDeletesItOnceStopped() {
        var m = DeviceLifecycle()
        _ = m.startAsked()
        #expect(m.deleteAsked() == .wait)
        #expect(m.started(true) == .stop)
        m.stopped()
        #expect(m.phase == .deleted)
    }

    @Test func deletingAStoppedDeviceIsImmediate() {
        var m = DeviceLifecycle()
        #expect(m.deleteAsked() == .none)
        #expect(m.phase == .deleted)
        #expect(m.deleteAsked() == .refuse)
    }

    @Test func waitsEndWhenTheDeviceAddsNoMoreEvents() {
        var m = DeviceLifecycle()
        #expect(m.endsWaits, "a device never started adds none")
        _ = m.startAsked()
        #expect(!m.endsWaits)
        _ = m.started(true)
        #expect(!m.endsWaits)
        _ = m.stopAsked()
        m.stopped()
        #expect(m.endsWaits)
    }

    @Test func theDescriptorBudgetCapsTheFleet() {
        #expect(DescriptorBudget.devices(descriptors: 1024) == (1024 - DescriptorBudget.reserve) / DescriptorBudget.perDevice)
        #expect(DescriptorBudget.devices(descriptors: 100) == 0)
        #expect(DescriptorBudget.devices(descriptors: Int.max) == DeviceFleet.maxDevices)
    }
}
