export * from './referral.decider';
export * from './fraud';
export * from './referral-code';
