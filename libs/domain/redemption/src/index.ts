export * from './redemption.views';
