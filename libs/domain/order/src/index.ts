export * from './order.decider';
