import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { WebhookEventKind } from '@loyalty/contracts';
import { configEntity } from '@loyalty/platform';

/** webhook.endpoints (migration Webhook001): a merchant's registered endpoint. Soft-deleted. */
@configEntity()
@Entity({ schema: 'webhook', name: 'endpoints' })
@Index('endpoints_live', { synchronize: false })
export class WebhookEndpoint {
  @PrimaryColumn('text') tenant!: string;
  @PrimaryColumn('text') id!: string;
  @Column('text') url!: string;
  @Column('text', { array: true }) events!: WebhookEventKind[];
  @Column('text') secret!: string;
  @Column('text', { default: 'active' }) status!: 'active' | 'disabled';
  @Column('integer', { name: 'failure_count', default: 0 }) failure_count!: number;
  @Column('timestamptz', { name: 'disabled_at', nullable: true }) disabled_at!: Date | null;
  @Column('timestamptz', { name: 'deleted_at', nullable: true }) deleted_at!: Date | null;
  @Column('timestamptz', { name: 'created_at', default: () => 'now()' }) created_at!: Date;
}
