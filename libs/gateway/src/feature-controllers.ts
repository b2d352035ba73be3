import type { Type } from '@nestjs/common';

/** Controllers of further capabilities (events, redemptions, …), one import per line. */
export const FEATURE_CONTROLLERS: Type<unknown>[] = [];
