import 'reflect-metadata';
import { Body, CallHandler, Controller, ExecutionContext, Get, Header, Headers, NestInterceptor, Param, ParseIntPipe, Post, Query, Req, Res, Sse, UseGuards, UseInterceptors, UsePipes, ValidationPipe } from '@nestjs/common';
import { Observable } from 'rxjs';
import { Idempotent, IdempotencyInterceptor } from '../idempotency/idempotency.interceptor';
import { RequireScopes } from '../auth/auth.decorators';
import { leanRefusal } from './lean-routes';

class OtherInterceptor implements NestInterceptor {
  intercept(_c: ExecutionContext, next: CallHandler): Observable<unknown> { return next.handle(); }
}
class AGuard { canActivate(): boolean { return true; } }

@Controller('v1')
class Routes {
  @Post('a') @RequireScopes('act') @Idempotent({ claimedByCommand: true })
  keyed(@Req() _req: unknown, @Res({ passthrough: true }) _res: unknown, @Param('id') _id: string, @Body() _body: object, @Query() _q: object, @Headers('x-y') _h: string) { return null; }

  @Get('b') plain() { return null; }
  @Get('c') @Header('Cache-Control', 'max-age=30') withHeader() { return null; }
  @Get('d') writesItself(@Res() _res: unknown) { return null; }
  @Get('e') @UseInterceptors(OtherInterceptor) otherInterceptor() { return null; }
  @Get('f') @UseGuards(AGuard) guarded() { return null; }
  @Get('g') piped(@Param('id', ParseIntPipe) _id: number) { return null; }
  @Get('h') @UsePipes(new ValidationPipe()) methodPipe() { return null; }
  @Sse('i') events() { return null; }
}

@Controller('v2') @UseInterceptors(OtherInterceptor)
class Intercepted { @Get('a') plain() { return null; } }

const target = (controller: Function, method: string) => ({
  instance: Object.create(controller.prototype) as object, controller: controller as never, method,
  callback: (controller.prototype as Record<string, (...a: unknown[]) => unknown>)[method],
});

describe('leanRefusal', () => {
  it('takes routes made only of what the gateway uses: scopes, Idempotency-Key, Req, passthrough Res, Body, Param, Query, Headers', () => {
    expect(leanRefusal(target(Routes, 'keyed'), IdempotencyInterceptor)).toBeNull();
    expect(leanRefusal(target(Routes, 'plain'), IdempotencyInterceptor)).toBeNull();
  });

  it.each([
    ['withHeader', /headers/], ['writesItself', /writes itself/], ['otherInterceptor', /interceptor/], ['guarded', /guard/],
    ['piped', /parameter pipe/], ['methodPipe', /pipe/], ['events', /SSE/],
  ])('leaves %s to Nest', (method, why) => {
    expect(leanRefusal(target(Routes, method), IdempotencyInterceptor)).toMatch(why);
  });

  it('leaves to Nest every route of a controller with an interceptor of its own', () => {
    expect(leanRefusal(target(Intercepted, 'plain'), IdempotencyInterceptor)).toMatch(/interceptor/);
  });
});
