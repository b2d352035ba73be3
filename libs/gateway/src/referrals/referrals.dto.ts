import { ApiProperty } from '@nestjs/swagger';
import { IsDefined, IsNotEmpty, IsString, MaxLength } from 'class-validator';

export class CreateReferralDto {
  @ApiProperty({ description: "The advocate's referral code (8 characters, Crockford base32)", maxLength: 64 })
  @IsDefined() @IsString() @IsNotEmpty() @MaxLength(64) code!: string;

  @ApiProperty({ description: 'The friend: M-…, ref:<external_ref> or phone:<E.164>. Enrol the friend first.', maxLength: 300 })
  @IsDefined() @IsString() @IsNotEmpty() @MaxLength(300) friend_member_id!: string;
}
