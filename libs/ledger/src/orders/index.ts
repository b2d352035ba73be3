export * from './orders.service';
export * from './orders.messages';
export * from './orders.migrations';
export * from './entry-review.service';
export * from './entry-index.projection';
export * from './campaign-budgets';
