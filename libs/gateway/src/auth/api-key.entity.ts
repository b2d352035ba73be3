import { Check, Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { Mode, configEntity } from '@loyalty/platform';

/**
 * gateway.api_keys (migration Gateway001): a key's SHA-256, its lookup prefix, programme, mode,
 * scopes and rate limit. The key itself is never stored.
 */
@configEntity()
@Entity({ schema: 'gateway', name: 'api_keys' })
@Index('api_keys_prefix', { synchronize: false })
@Check('api_keys_mode_check', `mode in ('live','test')`)
export class ApiKey {
  @PrimaryColumn('text') id!: string;
  @Column('text', { name: 'program_id' }) program_id!: string;
  @Column('text') mode!: Mode;
  @Column('text', { nullable: true }) name!: string | null;
  @Column('text') prefix!: string;
  @Column('bytea') hash!: Buffer;
  @Column('text', { array: true }) scopes!: string[];
  @Column('integer', { name: 'rate_burst', nullable: true }) rate_burst!: number | null;
  @Column('integer', { name: 'rate_per_second', nullable: true }) rate_per_second!: number | null;
  @Column('timestamptz', { name: 'created_at', default: () => 'now()' }) created_at!: Date;
  @Column('timestamptz', { name: 'expires_at', nullable: true }) expires_at!: Date | null;
  @Column('timestamptz', { name: 'revoked_at', nullable: true }) revoked_at!: Date | null;
  @Column('text', { name: 'rotated_to', nullable: true }) rotated_to!: string | null;
}
