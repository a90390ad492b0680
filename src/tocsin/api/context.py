"""What every route needs, made once per app: the store, the clock, the caller's identity."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Header, Request

from tocsin.api.security import Authenticator, Principal
from tocsin.api.service import ReminderService
from tocsin.clock import Clock
from tocsin.settings import Settings
from tocsin.store import Store


@dataclass(frozen=True, kw_only=True, slots=True)
class ApiContext:
    store: Store
    settings: Settings
    clock: Clock
    auth: Authenticator
    reminders: ReminderService


def get_context(request: Request) -> ApiContext:
    context: ApiContext = request.app.state.tocsin
    return context


Context = Annotated[ApiContext, Depends(get_context)]


async def get_principal(
    context: Context,
    request: Request,
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> Principal:
    principal = await context.auth.authenticate(authorization)
    request.state.principal = principal.scope
    return principal


Caller = Annotated[Principal, Depends(get_principal)]
