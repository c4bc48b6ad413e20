// Key Vault (RBAC) with Baton's secrets. The apps reference them through the managed identity
// (Key Vault Secrets User), so no secret value is part of an app's definition. Optional secrets
// are stored only when given.
param location string
param tags object
param name string
@description('The apps\' managed identity: Key Vault Secrets User.')
param readerPrincipalId string
@description('The person running azd: Key Vault Secrets Officer (read and rotate). Empty: nobody.')
param officerPrincipalId string
param officerPrincipalType string
@secure()
param databaseUrl string
@secure()
param postgresAdminPassword string
@secure()
param secretKey string
@secure()
param authClientSecret string
@secure()
param slackWebhookUrl string
@secure()
param slackSigningSecret string
@secure()
param slackBotToken string
@secure()
param teamsWebhookUrl string
@secure()
param teamsAppPassword string
@secure()
param smtpUrl string
@secure()
param webhookSecret string

var secretsUserRole = '4633458b-17de-408a-b874-0445c86b69e6'
var secretsOfficerRole = 'b86a8fe4-44ce-4948-aee5-eccb2c155cd7'

resource vault 'Microsoft.KeyVault/vaults@2023-07-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    tenantId: tenant().tenantId
    sku: {
      family: 'A'
      name: 'standard'
    }
    enableRbacAuthorization: true
    enableSoftDelete: true
    softDeleteRetentionInDays: 7
    publicNetworkAccess: 'Enabled'
  }
}

resource reader 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(vault.id, readerPrincipalId, secretsUserRole)
  scope: vault
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', secretsUserRole)
    principalId: readerPrincipalId
    principalType: 'ServicePrincipal'
  }
}

resource officer 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(officerPrincipalId)) {
  name: guid(vault.id, officerPrincipalId, secretsOfficerRole)
  scope: vault
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', secretsOfficerRole)
    principalId: officerPrincipalId
    principalType: officerPrincipalType
  }
}

resource databaseUrlSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = {
  parent: vault
  name: 'database-url'
  properties: {
    value: databaseUrl
  }
}

resource postgresPasswordSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = {
  parent: vault
  name: 'postgres-admin-password'
  properties: {
    value: postgresAdminPassword
  }
}

resource secretKeySecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = {
  parent: vault
  name: 'baton-secret-key'
  properties: {
    value: secretKey
  }
}

resource authClientSecretSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = if (!empty(authClientSecret)) {
  parent: vault
  name: 'entra-client-secret'
  properties: {
    value: authClientSecret
  }
}

resource slackWebhookUrlSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = if (!empty(slackWebhookUrl)) {
  parent: vault
  name: 'slack-webhook-url'
  properties: {
    value: slackWebhookUrl
  }
}

resource slackSigningSecretSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = if (!empty(slackSigningSecret)) {
  parent: vault
  name: 'slack-signing-secret'
  properties: {
    value: slackSigningSecret
  }
}

resource slackBotTokenSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = if (!empty(slackBotToken)) {
  parent: vault
  name: 'slack-bot-token'
  properties: {
    value: slackBotToken
  }
}

resource teamsWebhookUrlSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = if (!empty(teamsWebhookUrl)) {
  parent: vault
  name: 'teams-webhook-url'
  properties: {
    value: teamsWebhookUrl
  }
}

resource teamsAppPasswordSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = if (!empty(teamsAppPassword)) {
  parent: vault
  name: 'teams-app-password'
  properties: {
    value: teamsAppPassword
  }
}

resource smtpUrlSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = if (!empty(smtpUrl)) {
  parent: vault
  name: 'smtp-url'
  properties: {
    value: smtpUrl
  }
}

resource webhookSecretSecret 'Microsoft.KeyVault/vaults/secrets@2023-07-01' = if (!empty(webhookSecret)) {
  parent: vault
  name: 'webhook-secret'
  properties: {
    value: webhookSecret
  }
}

output name string = vault.name
// Versionless URIs: an app picks up a rotated secret without a new deployment. Empty: not given.
output secretUris object = {
  databaseUrl: databaseUrlSecret.properties.secretUri
  secretKey: secretKeySecret.properties.secretUri
  authClientSecret: empty(authClientSecret) ? '' : authClientSecretSecret.properties.secretUri
  slackWebhookUrl: empty(slackWebhookUrl) ? '' : slackWebhookUrlSecret.properties.secretUri
  slackSigningSecret: empty(slackSigningSecret) ? '' : slackSigningSecretSecret.properties.secretUri
  slackBotToken: empty(slackBotToken) ? '' : slackBotTokenSecret.properties.secretUri
  teamsWebhookUrl: empty(teamsWebhookUrl) ? '' : teamsWebhookUrlSecret.properties.secretUri
  teamsAppPassword: empty(teamsAppPassword) ? '' : teamsAppPasswordSecret.properties.secretUri
  smtpUrl: empty(smtpUrl) ? '' : smtpUrlSecret.properties.secretUri
  webhookSecret: empty(webhookSecret) ? '' : webhookSecretSecret.properties.secretUri
}
