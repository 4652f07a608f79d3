import Hummingbird
import Prometheus

/// A Prometheus registry owned by one server (no global metrics bootstrap), with request counters
/// and the `/metrics` text.
package final class ServerMetrics: Sendable {
    /// The registry; servers add their own counters to it.
    package let registry = PrometheusCollectorRegistry()

    package init() {}

    /// Counts one answered request by method, route template and status.
    package func countRequest(method: String, route: String, status: Int) {
        registry.makeCounter(name: "http_requests_total", labels: [("method", method), ("route", route), ("status", String(status))])
            .increment()
    }

    /// The Prometheus text exposition of every metric.
    package func render() -> [UInt8] {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }

    /// Adds `GET /metrics` to a router.
    package func addRoute<Context: RequestContext>(to router: Router<Context>) {
        router.get("/metrics") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                     body: ResponseBody(byteBuffer: ByteBuffer(bytes: self.render())))
        }
    }
}

/// Middleware that counts requests into ``ServerMetrics``.
package struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: ServerMetrics

    package init(metrics: ServerMetrics) { self.metrics = metrics }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            let response = try await next(request, context)
            metrics.countRequest(method: request.method.rawValue, route: context.endpointPath ?? "unmatched", status: response.status.code)
            return response
        } catch let error as any HTTPResponseError {
            metrics.countRequest(method: request.method.rawValue, route: context.endpointPath ?? "unmatched", status: error.status.code)
            throw error
        } catch {
            metrics.countRequest(method: request.method.rawValue, route: context.endpointPath ?? "unmatched", status: 500)
            throw error
        }
    }
}
