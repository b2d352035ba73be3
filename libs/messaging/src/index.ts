export * from './command-bus.port';
export * from './in-process.transport';
export * from './kafka.transport';
export * from './kafka.health';
