import { Pool } from 'pg';
import { EventStore, Projection, sharedFold } from '@loyalty/event-store';
import { MEMBER_FOLD } from '@loyalty/domain-member';
import { ProgramStore } from '@loyalty/programs';
import { DeliveryQueue } from './delivery/delivery.queue';
import { EndpointsRepository } from './endpoints/endpoints.repository';
import { programInfoSource } from './events/program-info';
import { WebhookEventsProjection } from './events/webhook-events.projection';

/** Every read model of the webhook service (the rebuild tool's convention: `<SERVICE>_PROJECTIONS(deps)`). */
export const WEBHOOK_PROJECTIONS = (deps: { pool: Pool; store: EventStore }): Projection[] => [
  new WebhookEventsProjection(deps.store, new EndpointsRepository(deps.pool), new DeliveryQueue(deps.pool), programInfoSource(new ProgramStore(deps.pool)), () => undefined, null, sharedFold(deps.store, deps.pool, MEMBER_FOLD)),
];
