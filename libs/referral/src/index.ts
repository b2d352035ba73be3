export * from './referral.module';
export * from './referral.migrations';
export * from './referral-decisions';
export * from './projections/referral.projection';
export * from './qualification/qualification.service';
export * from './create-referral/create-referral.service';
export * from './referral-details/referral-details.service';
export * from './review-referral/review-referral.service';
