export * from './redemption.module';
export * from './redemption.migrations';
export * from './spending.context';
export * from './vouchers/vouchers.service';
export * from './reservations/reservations.service';
export * from './expiry/expiry.sweeper';
export * from './projections/redemptions.projection';
