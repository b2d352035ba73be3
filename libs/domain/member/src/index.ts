export * from './member.events';
export * from './member.state';
export * from './member.decider';
export * from './member.spending';
export * from './member.tiers';
export * from './member.expiry';
export * from './member.earning';
export * from './member.views';
