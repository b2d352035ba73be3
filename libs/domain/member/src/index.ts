export * from './member.events';
export * from './member.state';
export * from './member.decider';
