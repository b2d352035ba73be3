// First import of main.ts: OpenTelemetry patches http and pg before anything loads them (off unless OTEL_EXPORTER_OTLP_ENDPOINT is set).
import { startTracing } from '@loyalty/telemetry';

startTracing('referral');
