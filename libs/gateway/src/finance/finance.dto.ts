import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString } from 'class-validator';

// The contents (RFC 3339 instants, F < T ≤ programme time, limits, cursors) are checked by the ledger,
// which knows the programme clock; here only the shape: known parameters, each given once.

export class LiabilityQuery {
  @ApiPropertyOptional({ format: 'date-time', description: 'the liability as it stood at this instant (programme time)' }) @IsOptional() @IsString() as_of?: string;
}

export class RollForwardQuery {
  @ApiPropertyOptional({ format: 'date-time', description: 'required; exclusive start of the period' }) @IsOptional() @IsString() from?: string;
  @ApiPropertyOptional({ format: 'date-time', description: 'required; inclusive end of the period, at most the programme time' }) @IsOptional() @IsString() to?: string;
}

export class LedgerEntriesQuery {
  @ApiPropertyOptional({ format: 'date-time', description: 'exclusive start; default: the beginning' }) @IsOptional() @IsString() from?: string;
  @ApiPropertyOptional({ format: 'date-time', description: 'inclusive end; default: the programme time' }) @IsOptional() @IsString() to?: string;
  @ApiPropertyOptional({ enum: ['earn', 'redeem', 'expire', 'reverse', 'adjust'] }) @IsOptional() @IsString() type?: string;
  @ApiPropertyOptional({ minimum: 1, maximum: 1000, default: 100 }) @IsOptional() @IsString() limit?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() cursor?: string;
}

export class AdminRollForwardQuery extends RollForwardQuery {
  @ApiPropertyOptional({ enum: ['live', 'test'], default: 'live' }) @IsOptional() @IsIn(['live', 'test']) mode?: 'live' | 'test';
}
