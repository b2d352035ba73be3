/** Extra readiness checks a process registers (broker connected, subscriptions caught up…). */
export const READINESS_CHECKS = Symbol.for('loyalty.READINESS_CHECKS');
export interface ReadinessCheck { name: string; check: () => Promise<boolean> | boolean }
