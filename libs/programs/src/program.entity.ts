import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { ProgramSettings, Rule, Tier } from '@loyalty/contracts';
import { configEntity } from '@loyalty/platform';

/** program.programs (migration Program001): a programme's names, settings, earning rules and tiers. */
@configEntity()
@Entity({ schema: 'program', name: 'programs' })
export class ProgramRecord {
  @PrimaryColumn('text') id!: string;
  @Column('text', { name: 'program_name' }) program_name!: string;
  @Column('text', { name: 'currency_name' }) currency_name!: string;
  @Column('jsonb') settings!: ProgramSettings;
  @Column('jsonb') rules!: Rule[];
  @Column('jsonb') tiers!: Tier[];
  @Column('timestamptz', { name: 'created_at', default: () => 'now()' }) created_at!: Date;
  @Column('timestamptz', { name: 'updated_at', default: () => 'now()' }) updated_at!: Date;
}
